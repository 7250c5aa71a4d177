/**
 * The templates section (`notification.templates`): its home, beside the templates area that reads
 * it; the service's root config (../config.ts) composes it. Every size the area holds has its bound
 * here.
 */
import { z } from 'zod';

import { positiveInt } from '../../../shared/config';

/** The templates area's store and limits. */
export const TemplatesConfigSchema = z
  .strictObject({
    /**
     * `database` (PostgreSQL / PGlite) or `memory` (tests, throwaway runs). Unset: as
     * `delivery.store_backend` (like the users area), `database` by default.
     */
    store_backend: z.enum(['database', 'memory']).optional(),
    /** Largest Liquid source of one part (subject, html, text, ...), in UTF-8 bytes. */
    max_source_bytes: positiveInt().default(65536),
    /** Templates stored in all (every category, channel and locale); one more is RESOURCE_EXHAUSTED. */
    max_templates: positiveInt().default(10000),
    /** Largest page ListTemplates returns (a larger page_size is capped); none asks for 50, or this when smaller. */
    max_page_size: positiveInt().default(100),
    /** Parsed templates kept in memory (least recently used out first). */
    parse_cache_size: positiveInt().default(1000),
    /** Largest output of one rendered part, in UTF-8 bytes; a larger one is INVALID_ARGUMENT. */
    max_render_bytes: positiveInt().default(262144),
    /** Longest a render of one part may run (LiquidJS `renderLimit`), in milliseconds. */
    render_time_limit_ms: positiveInt().default(1000),
    /** Memory a render may allocate (LiquidJS `memoryLimit`: string lengths and loop sizes summed). */
    render_memory_limit: positiveInt().default(10000000),
  })
  .prefault({});

/** The templates section, validated. */
export type TemplatesConfig = z.infer<typeof TemplatesConfigSchema>;

/** The defaults, as the schema fills them. */
export const DEFAULT_TEMPLATES_CONFIG: Readonly<TemplatesConfig> = Object.freeze(
  TemplatesConfigSchema.parse({}),
);
