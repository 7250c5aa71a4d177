/**
 * The templates area: templates per category, channel and locale (memory or database store), the
 * catalog TemplateService manages, and the TemplateRenderer `Notify` calls. `createTemplates` builds
 * them from config for the composition root, on the storage it hands over.
 */
import type { Knex } from 'knex';
import type { NotifyConfig } from '../notify/config';
import { TemplateCatalog } from './catalog';
import type { TemplatesConfig } from './config';
import { DatabaseTemplateStore } from './database-store';
import { TemplateEngine } from './engine';
import { InMemoryTemplateStore } from './memory-store';
import { fallbackChain } from './locale';
import { TemplateRendering } from './renderer';
import type { TemplateStore } from './store';

export { TemplateCatalog, type TemplateInput, type TemplatePage } from './catalog';
export { TemplatesConfigSchema, type TemplatesConfig, DEFAULT_TEMPLATES_CONFIG } from './config';
export { DatabaseTemplateStore } from './database-store';
export { TemplateEngine } from './engine';
export { InMemoryTemplateStore } from './memory-store';
export { TemplateRendering, type Preview } from './renderer';
export { smsSegments, splitSegments, type SmsSegments } from './sms-segments';
export type { TemplateStore, TemplateKey } from './store';
export type * from './types';

/** The templates area, built. */
export interface Templates {
  store: TemplateStore;
  engine: TemplateEngine;
  catalog: TemplateCatalog;
  renderer: TemplateRendering;
}

/**
 * Builds the area: the database store on `knex` when `store_backend` is `database` (the composition
 * root resolves an unset one), else the memory store.
 */
export function createTemplates(options: {
  config: TemplatesConfig;
  notify: Pick<NotifyConfig, 'categories' | 'default_locale'>;
  knex?: Knex;
}): Templates {
  const { config, notify, knex } = options;
  // A default locale that is not a BCP 47 tag stops the service at start, not every render.
  fallbackChain('', notify.default_locale);
  let store: TemplateStore;
  if (config.store_backend === 'database') {
    if (!knex) throw new Error('templates.store_backend is database but no database is open');
    store = new DatabaseTemplateStore(knex);
  } else {
    store = new InMemoryTemplateStore();
  }
  const engine = new TemplateEngine({
    maxSourceBytes: config.max_source_bytes,
    parseCacheSize: config.parse_cache_size,
    maxRenderBytes: config.max_render_bytes,
    renderTimeLimitMs: config.render_time_limit_ms,
    renderMemoryLimit: config.render_memory_limit,
  });
  const catalog = new TemplateCatalog({ store, engine, config, notify });
  const renderer = new TemplateRendering({ store, engine, catalog, notify });
  return { store, engine, catalog, renderer };
}
