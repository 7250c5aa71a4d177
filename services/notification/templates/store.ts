/**
 * TemplateStore: where templates are kept, implemented by InMemoryTemplateStore and
 * DatabaseTemplateStore (knex: PostgreSQL or PGlite). Stores trust their input: validation, the
 * clock and the bounds' values belong to the catalog.
 */
import type { NotifyChannel } from '../notify/config';
import type { Template } from './types';

/** The identity of a template. */
export interface TemplateKey {
  category: string;
  channel: NotifyChannel;
  locale: string;
}

/** One page of templates ordered by (category, channel, locale), after `after` when given. */
export interface TemplatePageQuery {
  /** Only this category's; undefined: all. */
  category?: string;
  limit: number;
  after?: TemplateKey;
}

/** Storage of templates. */
export interface TemplateStore {
  readonly backend: 'database' | 'memory';
  get(key: TemplateKey): Promise<Template | undefined>;
  /** The template of the first locale of `locales` that has one (the fallback in one read). */
  findFirst(
    category: string,
    channel: NotifyChannel,
    locales: readonly string[],
  ): Promise<Template | undefined>;
  list(query: TemplatePageQuery): Promise<Template[]>;
  /**
   * Creates or replaces the template of its key. A new key when `maxTemplates` are stored already is
   * refused: `{ full: true }`, nothing written.
   */
  upsert(
    template: Template,
    maxTemplates: number,
  ): Promise<{ template: Template; created: boolean } | { full: true }>;
  /** Writes every template (create or replace) in one transaction: all or nothing. */
  upsertAll(
    templates: readonly Template[],
    maxTemplates: number,
  ): Promise<{ created: number } | { full: true }>;
  /** False when there was none. */
  delete(key: TemplateKey): Promise<boolean>;
}

/** Orders keys as the listing does (code-unit order, as PostgreSQL's "C" collation). */
export function compareKeys(a: TemplateKey, b: TemplateKey): number {
  for (const f of ['category', 'channel', 'locale'] as const) {
    if (a[f] !== b[f]) return a[f] < b[f] ? -1 : 1;
  }
  return 0;
}
