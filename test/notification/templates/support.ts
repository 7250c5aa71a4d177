/** Helpers shared by the templates tests. */
import {
  DEFAULT_TEMPLATES_CONFIG,
  type TemplatesConfig,
} from '../../../services/notification/templates/config';
import { TemplateCatalog } from '../../../services/notification/templates/catalog';
import { TemplateEngine } from '../../../services/notification/templates/engine';
import { InMemoryTemplateStore } from '../../../services/notification/templates/memory-store';
import { TemplateRendering } from '../../../services/notification/templates/renderer';
import type { TemplateStore } from '../../../services/notification/templates/store';
import { NotifyConfigSchema, type NotifyConfig } from '../../../services/notification/notify/config';

/** The categories the templates tests configure. */
export const NOTIFY: NotifyConfig = NotifyConfigSchema.parse({
  default_locale: 'en',
  categories: [
    { name: 'orders', channels: ['inbox', 'email', 'sms', 'push'] },
    { name: 'security', channels: ['email', 'sms'], required: true },
  ],
});

/** The area over `store` (memory by default) with `overrides` of the templates section. */
export function buildTemplates(
  overrides: Partial<TemplatesConfig> = {},
  store: TemplateStore = new InMemoryTemplateStore(),
  notify: NotifyConfig = NOTIFY,
) {
  const config = { ...DEFAULT_TEMPLATES_CONFIG, ...overrides };
  const engine = new TemplateEngine({
    maxSourceBytes: config.max_source_bytes,
    parseCacheSize: config.parse_cache_size,
    maxRenderBytes: config.max_render_bytes,
    renderTimeLimitMs: config.render_time_limit_ms,
    renderMemoryLimit: config.render_memory_limit,
  });
  const catalog = new TemplateCatalog({ store, engine, config, notify });
  const renderer = new TemplateRendering({ store, engine, catalog, notify });
  return { store, engine, catalog, renderer, config };
}

/** The message of what `work` throws (a test fails when it does not throw). */
export async function errorOf(work: () => unknown): Promise<Error & { code?: string; field?: string }> {
  try {
    await work();
  } catch (err) {
    return err as Error & { code?: string; field?: string };
  }
  throw new Error('expected an error, got none');
}
