/**
 * TemplateCatalog: the templates a TemplateService caller and `templates:sync` manage. Validates
 * every template before it is stored (the category is configured and uses the channel, the locale
 * is a BCP 47 tag stored canonical, only the channel's parts, each within `max_source_bytes`, no
 * NUL, and every part parses: a syntax error names the part, its line and column), stamps it with
 * the clock, and bounds the store (`max_templates`) and its pages (the one page-size rule).
 */
import { InvalidArgumentError, NotFoundError, ResourceExhaustedError } from '../../../shared/errors';
import { type Clock, systemClock } from '../../../shared/runtime/clock';
import { cutText, hasUnstorableText } from '../../../shared/text/cut';
import { decodeTextKeyToken, encodeTextKeyToken } from '../../../shared/storage/keyset-token';
import { pageSize } from '../../../shared/storage/page-size';
import { NOTIFY_CHANNELS, type NotifyChannel, type NotifyConfig } from '../notify/config';
import type { TemplatesConfig } from './config';
import type { TemplateEngine } from './engine';
import { canonicalLocale } from './locale';
import { CHANNEL_PARTS, missingPart, type PartName, presentParts } from './rules';
import type { TemplateKey, TemplateStore } from './store';
import type { Template, TemplateContent } from './types';

/** A template as a caller writes it (the key not yet canonical). */
export interface TemplateInput {
  category: string;
  channel: string;
  locale: string;
  content: TemplateContent;
}

/** One page of templates. */
export interface TemplatePage {
  templates: Template[];
  /** '' when this is the last page. */
  nextPageToken: string;
}

/** Deepest nesting of a push template's `data`. */
export const MAX_DATA_DEPTH = 8;

/** What the catalog needs. */
export interface TemplateCatalogDeps {
  store: TemplateStore;
  engine: TemplateEngine;
  config: TemplatesConfig;
  notify: Pick<NotifyConfig, 'categories' | 'default_locale'>;
  clock?: Clock;
}

/** The suffix of a digest template's category: `comments.digest` is the digest of `comments`. */
export const DIGEST_TEMPLATE_SUFFIX = '.digest';

/**
 * Checks a category and channel against `notify.categories` (shared with the renderer). A digest
 * template's category `<name>.digest` needs `<name>` configured with a digest for the channel.
 */
export function checkCategoryChannel(
  notify: Pick<NotifyConfig, 'categories'>,
  category: string,
  channel: string,
): NotifyChannel {
  if (category.endsWith(DIGEST_TEMPLATE_SUFFIX)) return checkDigestChannel(notify, category, channel);
  const cat = notify.categories.find((c) => c.name === category);
  if (!cat) {
    const names = notify.categories.map((c) => c.name);
    throw new InvalidArgumentError(
      `unknown category ${JSON.stringify(category.slice(0, 64))}: the configured categories are ${
        names.length ? names.join(', ') : '(none: set notify.categories)'
      }`,
      'category',
    );
  }
  if (!(NOTIFY_CHANNELS as readonly string[]).includes(channel)) {
    throw new InvalidArgumentError(`channel must be one of ${NOTIFY_CHANNELS.join(', ')}`, 'channel');
  }
  if (!cat.channels.includes(channel as NotifyChannel)) {
    throw new InvalidArgumentError(
      `the category ${category} does not use the ${channel} channel (it uses ${cat.channels.join(', ')})`,
      'channel',
    );
  }
  return channel as NotifyChannel;
}

/** A digest template's category and channel: `<name>` configured, digesting `channel`. */
function checkDigestChannel(
  notify: Pick<NotifyConfig, 'categories'>,
  category: string,
  channel: string,
): NotifyChannel {
  const name = category.slice(0, -DIGEST_TEMPLATE_SUFFIX.length);
  const cat = notify.categories.find((c) => c.name === name);
  if (!cat) {
    const names = notify.categories.map((c) => c.name);
    throw new InvalidArgumentError(
      `unknown category ${JSON.stringify(cutText(name, 64))} (of the digest template ${cutText(category, 72)}): the configured categories are ${
        names.length ? names.join(', ') : '(none: set notify.categories)'
      }`,
      'category',
    );
  }
  const digested = Object.keys(cat.digest ?? {});
  if (digested.length === 0) {
    throw new InvalidArgumentError(
      `the category ${name} has no digest (notify.categories[].digest)`,
      'category',
    );
  }
  if (!digested.includes(channel)) {
    throw new InvalidArgumentError(
      `the category ${name} does not digest ${cutText(channel, 16)} (its digests: ${digested.join(', ')})`,
      'channel',
    );
  }
  return channel as NotifyChannel;
}

/** The templates, validated and bounded. */
export class TemplateCatalog {
  private readonly clock: Clock;

  constructor(private readonly deps: TemplateCatalogDeps) {
    this.clock = deps.clock ?? systemClock;
  }

  private key(category: string, channel: string, locale: string): TemplateKey {
    return {
      category,
      channel: checkCategoryChannel(this.deps.notify, category, channel),
      locale: canonicalLocale(locale),
    };
  }

  /**
   * Checks a template as upsert would, parsing every part (nothing is stored): InvalidArgumentError
   * naming the first problem. `where` prefixes the field names (`content`, or a file's path).
   */
  validate(input: TemplateInput, where = 'content'): Template {
    const key = this.key(input.category, input.channel, input.locale);
    const content = this.validateContent(key.channel, input.content, where);
    return { ...key, content, updatedAt: new Date(this.clock.now()) };
  }

  /** Validates parts a channel's template (or an override) gives; every one parsed. */
  validateContent(channel: NotifyChannel, raw: TemplateContent | undefined, where: string): TemplateContent {
    const content = presentParts(raw);
    const allowed = CHANNEL_PARTS[channel];
    for (const part of Object.keys(content) as PartName[]) {
      if (!allowed.includes(part)) {
        throw new InvalidArgumentError(
          `${where}.${part}: the ${channel} channel has no ${part} (it has ${allowed.join(', ')})`,
          `${where}.${part}`,
        );
      }
    }
    for (const part of ['title', 'body', 'subject', 'html', 'text'] as const) {
      const source = content[part];
      if (source !== undefined)
        this.checkSource(source, part === 'html' ? 'html' : 'text', `${where}.${part}`);
    }
    if (content.data) this.checkData(content.data, `${where}.data`, 0);
    return content;
  }

  private checkSource(source: string, kind: 'html' | 'text', field: string): void {
    if (source.includes('\u0000'))
      throw new InvalidArgumentError(`${field} must not contain NUL characters`, field);
    // Bytes first (parse checks them too): the message should say "too long", not a parse error.
    if (Buffer.byteLength(source, 'utf8') > this.deps.config.max_source_bytes) {
      throw new InvalidArgumentError(
        `${field} is longer than ${this.deps.config.max_source_bytes} bytes`,
        field,
      );
    }
    this.deps.engine.parse(source, kind, field);
  }

  private checkData(value: unknown, field: string, depth: number): void {
    if (depth === 0 && Buffer.byteLength(JSON.stringify(value), 'utf8') > this.deps.config.max_source_bytes) {
      throw new InvalidArgumentError(
        `${field} is larger than ${this.deps.config.max_source_bytes} bytes`,
        field,
      );
    }
    if (depth > MAX_DATA_DEPTH)
      throw new InvalidArgumentError(`${field} nests deeper than ${MAX_DATA_DEPTH}`, field);
    if (typeof value === 'string') this.checkSource(value, 'text', field);
    else if (Array.isArray(value)) value.forEach((v, i) => this.checkData(v, `${field}[${i}]`, depth + 1));
    else if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) this.checkData(v, `${field}.${k}`, depth + 1);
    }
    // The values' sources are checked above; a key with a NUL, or a lone surrogate anywhere (Connect
    // JSON carries `"\ud800"` in a Struct), would fail the jsonb write with INTERNAL instead.
    if (depth === 0 && hasUnstorableText(JSON.stringify(value))) {
      throw new InvalidArgumentError(`${field} must not contain NUL characters or broken text`, field);
    }
  }

  /** Creates or replaces a template after validating it. */
  async upsert(input: TemplateInput): Promise<{ template: Template; created: boolean }> {
    const template = this.validate(input);
    const missing = missingPart(template.channel, template.content);
    if (missing) throw new InvalidArgumentError(`content: ${missing}`, 'content');
    const result = await this.deps.store.upsert(template, this.deps.config.max_templates);
    if ('full' in result) throw this.full();
    return result;
  }

  /** Writes validated templates (from validate) in one transaction: all or none. */
  async upsertAll(templates: readonly Template[]): Promise<{ created: number }> {
    const result = await this.deps.store.upsertAll(templates, this.deps.config.max_templates);
    if ('full' in result) throw this.full();
    return result;
  }

  private full(): ResourceExhaustedError {
    return new ResourceExhaustedError(
      `the catalog holds its maximum of ${this.deps.config.max_templates} templates (templates.max_templates)`,
    );
  }

  /** One template by its exact key (no fallback); NotFoundError when absent. */
  async get(category: string, channel: string, locale: string): Promise<Template> {
    const key = this.key(category, channel, locale);
    const t = await this.deps.store.get(key);
    if (!t) throw notFound(key);
    return t;
  }

  /** Deletes one template; NotFoundError when absent. */
  async delete(category: string, channel: string, locale: string): Promise<void> {
    const key = this.key(category, channel, locale);
    if (!(await this.deps.store.delete(key))) throw notFound(key);
  }

  /** One page ordered by (category, channel, locale), optionally of one category. */
  async list(query: { category?: string; pageSize?: number; pageToken?: string }): Promise<TemplatePage> {
    const category = query.category || undefined;
    if (category !== undefined) checkCategoryName(this.deps.notify, category);
    const limit = pageSize(query.pageSize, {
      default: Math.min(50, this.deps.config.max_page_size),
      max: this.deps.config.max_page_size,
    });
    const binding = `templates:${category ?? ''}`;
    let after: TemplateKey | undefined;
    if (query.pageToken) after = decodeKey(binding, query.pageToken);
    const rows = await this.deps.store.list({ category, limit: limit + 1, after });
    const templates = rows.slice(0, limit);
    const last = templates[templates.length - 1];
    return {
      templates,
      nextPageToken:
        rows.length > limit && last
          ? encodeTextKeyToken(binding, JSON.stringify([last.category, last.channel, last.locale]))
          : '',
    };
  }
}

/**
 * The position a ListTemplates token carries: the last key of the page, as the JSON array
 * `[category, channel, locale]` in the one text-key token of shared/storage/keyset-token.ts.
 */
function decodeKey(binding: string, token: string): TemplateKey {
  const invalid = new InvalidArgumentError('page_token is not a valid page token', 'page_token');
  let key: unknown;
  try {
    key = JSON.parse(decodeTextKeyToken(binding, token));
  } catch (err) {
    if (err instanceof InvalidArgumentError) throw err;
    throw invalid;
  }
  if (!Array.isArray(key) || key.length !== 3 || !key.every((k) => typeof k === 'string')) throw invalid;
  const [category, channel, locale] = key as [string, string, string];
  if (!(NOTIFY_CHANNELS as readonly string[]).includes(channel)) throw invalid;
  return { category, channel: channel as NotifyChannel, locale };
}

function checkCategoryName(notify: Pick<NotifyConfig, 'categories'>, category: string): void {
  const cat = notify.categories.find((c) => c.name === category);
  if (!cat) checkCategoryChannel(notify, category, '');
}

function notFound(key: TemplateKey): NotFoundError {
  return new NotFoundError(
    `no template of category ${key.category}, channel ${key.channel}, locale ${key.locale}`,
  );
}
