/**
 * The notify section (`notification.notify`): the categories a `Notify` call names, the default
 * locale, and the one-click unsubscribe link. Its home is beside the notify area; the users area
 * (preferences) and the templates area (which categories exist) read the same validated object,
 * handed to them by the composition root.
 */
import { z } from 'zod';

import { duration, positiveInt, uniqueNames } from '../../../shared/config';
import { parseClockTime } from '../../../shared/time/zone';
import { CHANNELS } from '../delivery/driver';

/** The channels a category can use: the inbox and the three delivery channels. */
export const NOTIFY_CHANNELS = ['inbox', ...CHANNELS] as const;
/** One channel of a category. */
export type NotifyChannel = (typeof NOTIFY_CHANNELS)[number];

const categoryName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, 'a category name is 1-64 of a-z, 0-9, ".", "_", "-"');

/** The delivery channels a cap or a digest applies to. */
const TIMED_CHANNELS = CHANNELS;

const localTime = z
  .string()
  .refine((t) => parseClockTime(t) !== undefined, 'a local time "HH:MM" (00:00-23:59)');

/**
 * One channel's digest of a category (issue 26): events inside the window are coalesced into one
 * message rendered by the category's digest template (category `<name>.digest`), which reads
 * `data.events` (each event's data, oldest first) and `data.count`. Exactly one of `window` and
 * `daily_at`.
 */
export const DigestConfigSchema = z
  .strictObject({
    /** A rolling window from the first event (e.g. "15m"), in seconds. */
    window: duration().optional(),
    /** Or one digest a day, sent at this local time of the user ("09:00"). */
    daily_at: localTime.optional(),
    /**
     * The data field whose value keys the digest (e.g. `thread_id`: one digest per thread); empty:
     * one digest per category. Events lacking the field go to the category's digest.
     */
    key: z.string().max(64).default(''),
    /** A digest with this many events goes at once. */
    max_count: positiveInt(10_000).default(100),
  })
  .refine((d) => (d.window === undefined) !== (d.daily_at === undefined), {
    message: 'exactly one of window and daily_at',
  });

/** One channel's digest, validated. */
export type DigestConfig = z.infer<typeof DigestConfigSchema>;

/** One frequency cap: at most `limit` messages of `channel` per user per `per` (issue 26). */
export const CapConfigSchema = z.strictObject({
  channel: z.enum(TIMED_CHANNELS),
  limit: positiveInt(),
  /** The sliding window, e.g. "1h", "1d" (seconds). */
  per: duration().refine((s) => s >= 1, { message: 'at least one second' }),
});

/** One cap, validated. */
export type CapConfig = z.infer<typeof CapConfigSchema>;

/** One category: what a notification is about, and how it reaches people unless they choose. */
export const CategoryConfigSchema = z
  .strictObject({
    /** The name `Notify`, templates and preferences use (e.g. `security`, `comments`). */
    name: categoryName,
    /** Shown on the preferences page. */
    description: z.string().max(200).default(''),
    /** The channels this category uses; a channel not listed never carries it. */
    channels: z.array(z.enum(NOTIFY_CHANNELS)).min(1),
    /** A required category (a security notice) cannot be turned off by the user, on any channel. */
    required: z.boolean().default(false),
    /**
     * Per-channel defaults for users who made no choice (a listed channel absent here is on): e.g.
     * `{ sms: false }` keeps SMS available but off until the user turns it on.
     */
    defaults: z.partialRecord(z.enum(NOTIFY_CHANNELS), z.boolean()).default({}),
    /**
     * What a frequency cap does to this category's messages: `throttle` (recorded THROTTLED, the
     * inbox keeps it; the default when absent) or `defer` (held until the next free slot).
     */
    on_cap: z.enum(['throttle', 'defer']).optional(),
    /** Per-channel digests (issue 26); a channel absent here sends each message on its own. */
    digest: z.partialRecord(z.enum(TIMED_CHANNELS), DigestConfigSchema).optional(),
  })
  .superRefine((cat, ctx) => {
    if (cat.name.endsWith('.digest')) {
      ctx.addIssue({
        code: 'custom',
        path: ['name'],
        message: 'a name ending in ".digest" is reserved for digest templates',
      });
    }
    for (const ch of Object.keys(cat.digest ?? {})) {
      if (!cat.channels.includes(ch as NotifyChannel)) {
        ctx.addIssue({
          code: 'custom',
          path: ['digest', ch],
          message: `a digest for ${ch}, which the category does not use`,
        });
      }
    }
    for (const ch of Object.keys(cat.defaults)) {
      if (!cat.channels.includes(ch as NotifyChannel)) {
        ctx.addIssue({
          code: 'custom',
          path: ['defaults', ch],
          message: `a default for ${ch}, which the category does not use`,
        });
      }
    }
  });

/** One validated category. */
export type CategoryConfig = z.infer<typeof CategoryConfigSchema>;

function isHttpsUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' && url.search === '' && url.hash === '';
  } catch {
    return false;
  }
}

/** The notify section. */
export const NotifyConfigSchema = z
  .strictObject({
    /** The last locale of every fallback (`es-MX` -> `es` -> this). BCP 47. */
    default_locale: z.string().min(2).default('en'),
    /** The categories; names unique. Empty: `Notify` refuses every call (INVALID_ARGUMENT). */
    categories: z.array(CategoryConfigSchema).superRefine(uniqueNames('category')).default([]),
    /** Users a topic fan-out handles per step (one transaction each). */
    topic_page_size: positiveInt().default(500),
    /**
     * Days a notification (with its fan-out lines) is kept; older ones are deleted by a purge run
     * hourly on one replica. A topic notification whose fan-out has not finished is kept.
     */
    retention_days: positiveInt().default(30),
    /** How far ahead `send_at` / `delay` may schedule a notification (seconds; "30d"). */
    max_schedule_ahead: duration().default(30 * 24 * 3600),
    /**
     * Per-user frequency caps across categories (issue 26), e.g. `[{channel: sms, limit: 3, per: 1h},
     * {channel: sms, limit: 10, per: 1d}]`. Required categories and CRITICAL are exempt.
     */
    caps: z.array(CapConfigSchema).max(32).default([]),
    /** Largest `user_ids` list of SubscribeTopic / UnsubscribeTopic. */
    max_topic_batch: positiveInt().default(1000),
    /** One-click unsubscribe (RFC 8058) in every email of a non-required category. */
    unsubscribe: z
      .strictObject({
        /**
         * Key the unsubscribe tokens are signed with (HMAC-SHA256), at least 32 bytes. Empty: a random
         * key per process (links stop working at restart; set it in production).
         */
        signing_key: z
          .string()
          .refine((k) => k === '' || Buffer.byteLength(k, 'utf8') >= 32, {
            message: 'must be at least 32 bytes (or empty: a random key per process)',
          })
          .default(''),
        /** How long an unsubscribe link works. */
        token_ttl_days: positiveInt().default(60),
        /**
         * The public HTTPS origin of the HTTP port the links point at (e.g.
         * `https://notify.example.com`, or with the path prefix of a proxy in front); must be an
         * `https://` URL without query. Empty: no List-Unsubscribe header is added.
         */
        public_base_url: z
          .string()
          .refine((u) => u === '' || isHttpsUrl(u), {
            message: 'must be an https:// URL (RFC 8058 links are HTTPS) or empty',
          })
          .default(''),
      })
      .prefault({}),
  })
  .prefault({});

/** The notify section, validated. */
export type NotifyConfig = z.infer<typeof NotifyConfigSchema>;
