/**
 * InMemoryTemplateStore: the `memory` store backend, for tests and throwaway runs. Same semantics
 * as DatabaseTemplateStore in one process; nothing survives a restart.
 */
import type { NotifyChannel } from '../notify/config';
import { compareKeys, type TemplateKey, type TemplatePageQuery, type TemplateStore } from './store';
import type { Template } from './types';

function keyOf(k: TemplateKey): string {
  return `${k.category}\u0000${k.channel}\u0000${k.locale}`;
}

function copy(t: Template): Template {
  return { ...t, content: structuredClone(t.content), updatedAt: new Date(t.updatedAt) };
}

/** The in-memory TemplateStore. */
export class InMemoryTemplateStore implements TemplateStore {
  readonly backend = 'memory' as const;
  private readonly templates = new Map<string, Template>();

  async get(key: TemplateKey): Promise<Template | undefined> {
    const t = this.templates.get(keyOf(key));
    return t && copy(t);
  }

  async findFirst(
    category: string,
    channel: NotifyChannel,
    locales: readonly string[],
  ): Promise<Template | undefined> {
    for (const locale of locales) {
      // Not copied: the renderer only reads it (this is the hot path of every Notify).
      const t = this.templates.get(keyOf({ category, channel, locale }));
      if (t) return t;
    }
    return undefined;
  }

  async list(query: TemplatePageQuery): Promise<Template[]> {
    return [...this.templates.values()]
      .filter((t) => query.category === undefined || t.category === query.category)
      .filter((t) => query.after === undefined || compareKeys(t, query.after) > 0)
      .sort(compareKeys)
      .slice(0, query.limit)
      .map(copy);
  }

  async upsert(
    template: Template,
    maxTemplates: number,
  ): Promise<{ template: Template; created: boolean } | { full: true }> {
    const k = keyOf(template);
    const created = !this.templates.has(k);
    if (created && this.templates.size >= maxTemplates) return { full: true };
    this.templates.set(k, copy(template));
    return { template: copy(template), created };
  }

  async upsertAll(
    templates: readonly Template[],
    maxTemplates: number,
  ): Promise<{ created: number } | { full: true }> {
    const fresh = new Set(templates.map(keyOf).filter((k) => !this.templates.has(k)));
    if (this.templates.size + fresh.size > maxTemplates) return { full: true };
    for (const t of templates) this.templates.set(keyOf(t), copy(t));
    return { created: fresh.size };
  }

  async delete(key: TemplateKey): Promise<boolean> {
    return this.templates.delete(keyOf(key));
  }
}
