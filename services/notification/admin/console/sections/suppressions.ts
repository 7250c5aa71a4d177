/**
 * The console's suppressions section (issue 29): list, search, add and remove suppression entries
 * through the Suppressions domain object, with the rules of AddSuppression / RemoveSuppression /
 * ListSuppressions (validation and normalisation in the domain, recipients masked in every answer).
 *
 * Routes (under /admin/console/api/):
 * - `GET suppressions?channel=&q=&cursor=&limit=`: newest first, one channel or all. `q` is an
 *   exact recipient (normalised as the list does: a lower-cased address, an E.164 number, a token);
 *   the store has no prefix search. A found entry is answered masked, without id, source or time
 *   (the domain's lookup by recipient answers the kind only).
 * - `POST suppressions` `{channel, recipient, reason, kind?}`: adds an entry. `reason` is the
 *   operator's words (required, at most MAX_NOTE_POINTS code points), kept in the entry's source
 *   `api:console:<operator>: <reason>` (cut to the source's 256 UTF-16 units, never inside a character); `kind` is
 *   the suppression reason of the domain (default `manual`).
 * - `POST suppressions/remove` `{channel, recipient, reason}`: lifts an entry by hand (the recipient
 *   in a body, out of access logs). 404 when the recipient is not on the list; 400
 *   `failed_precondition` for an SMS STOP, which only the recipient lifts.
 */
import { InvalidArgumentError } from '../../../../../shared/errors';
import { pageSizeParam } from '../../../../../shared/storage/page-size';
import { cutText } from '../../../../../shared/text/cut';
import { checkText, replaceControlCharacters } from '../../../../../shared/text/check';
import type { Channel } from '../../../delivery/driver';
import { maskRecipient } from '../../../delivery/mask';
import {
  DEFAULT_SUPPRESSION_PAGE_SIZE,
  MAX_SOURCE_LENGTH,
  MAX_SUPPRESSION_PAGE_SIZE,
  normaliseRecipient,
  SUPPRESSION_REASONS,
  type SuppressionReason,
  type SuppressionView,
} from '../../../delivery/suppression';
import { CHANNELS } from '../../../delivery/types';
import { sendJson } from '../../http';
import { type ConsoleSection, jsonObject, singleParam } from '../console-gateway';
import type { ConsoleSectionDeps } from './index';

/** Longest operator reason, in code points. */
export const MAX_NOTE_POINTS = 200;
/** A suppression body is small: a channel, a recipient (a device token at most 4 KiB) and a reason. */
const SUPPRESSION_BODY_BYTES = 16 * 1024;

/** One entry as the console answers it. */
export interface SuppressionJson {
  id: string | null;
  channel: Channel;
  /** Masked. */
  recipient: string;
  kind: SuppressionReason;
  source: string | null;
  created_at: string | null;
}

function toJson(v: SuppressionView): SuppressionJson {
  return {
    id: v.id,
    channel: v.channel,
    recipient: v.maskedRecipient,
    kind: v.reason,
    source: v.source,
    created_at: v.createdAt.toISOString(),
  };
}

function channelOf(value: unknown, field = 'channel'): Channel {
  if (typeof value !== 'string' || !(CHANNELS as readonly string[]).includes(value)) {
    throw new InvalidArgumentError(`${field} must be one of ${CHANNELS.join(', ')}`, field);
  }
  return value as Channel;
}

/** The operator's reason: required, printable, at most MAX_NOTE_POINTS code points. */
export function operatorReason(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw new InvalidArgumentError('reason is required: say why', 'reason');
  }
  return checkText(value.trim(), 'reason', { max: MAX_NOTE_POINTS });
}

function kindOf(value: unknown): SuppressionReason {
  if (value === undefined || value === null || value === '') return 'manual';
  if (typeof value !== 'string' || !(SUPPRESSION_REASONS as readonly string[]).includes(value)) {
    throw new InvalidArgumentError(`kind must be one of ${SUPPRESSION_REASONS.join(', ')}`, 'kind');
  }
  return value as SuppressionReason;
}

/** The entry's source: who and why, cut on code points to what the domain keeps. */
export function consoleSource(operator: string, reason: string): string {
  const who = cutText(replaceControlCharacters(operator), 64, { unit: 'code_point' });
  // Cut to what the domain keeps, counted as it counts (code points).
  return cutText(`api:console:${who}: ${reason}`, MAX_SOURCE_LENGTH, { unit: 'code_point', ellipsis: '…' });
}

/** The suppressions section. */
export function suppressionsSection(deps: ConsoleSectionDeps): ConsoleSection {
  const { suppressions } = deps;
  const log = deps.logger.child({ component: 'console-suppressions' });
  return {
    name: 'suppressions',
    routes: (api) => [
      api.route(['GET'], 'suppressions', async ({ res, query }) => {
        const rawChannel = singleParam(query, 'channel') || undefined;
        const channel = rawChannel === undefined ? undefined : channelOf(rawChannel);
        const q = singleParam(query, 'q')?.trim() || undefined;
        const limit = pageSizeParam(singleParam(query, 'limit'), {
          default: DEFAULT_SUPPRESSION_PAGE_SIZE,
          max: MAX_SUPPRESSION_PAGE_SIZE,
        });
        if (q !== undefined) {
          sendJson(res, 200, { items: await search(channel, q), next_cursor: null });
          return;
        }
        const page = await suppressions.list(channel, singleParam(query, 'cursor') ?? '', limit);
        sendJson(res, 200, {
          items: page.entries.map(toJson),
          next_cursor: page.nextPageToken || null,
        });
      }),
      api.route(
        ['POST'],
        'suppressions',
        async ({ res, body, operator }) => {
          const input = jsonObject(body);
          const channel = channelOf(input.channel);
          const reason = operatorReason(input.reason);
          const { entry, created } = await suppressions.addEntry({
            channel,
            recipient: input.recipient as string,
            reason: kindOf(input.kind),
            source: consoleSource(operator.userId, reason),
          });
          sendJson(res, created ? 201 : 200, { item: toJson(entry), created });
        },
        { body: SUPPRESSION_BODY_BYTES },
      ),
      api.route(
        ['POST'],
        'suppressions/remove',
        async ({ res, body, operator }) => {
          const input = jsonObject(body);
          const channel = channelOf(input.channel);
          const reason = operatorReason(input.reason);
          const recipient = normaliseRecipient(channel, input.recipient);
          await suppressions.removeByHand(channel, recipient, `console:${operator.userId}`);
          log.info(
            { channel, recipient: maskRecipient(channel, recipient), operator: operator.userId, reason },
            'suppression removed from the console',
          );
          sendJson(res, 200, { removed: true });
        },
        { body: SUPPRESSION_BODY_BYTES },
      ),
    ],
  };

  /** The entries of exactly `q` (normalised per channel): of `channel`, or of every channel it fits. */
  async function search(channel: Channel | undefined, q: string): Promise<SuppressionJson[]> {
    const channels = channel ? [channel] : CHANNELS;
    const keys: [Channel, string][] = [];
    for (const ch of channels) {
      try {
        keys.push([ch, normaliseRecipient(ch, q, 'q')]);
      } catch (err) {
        if (channel) throw err;
      }
    }
    if (keys.length === 0) {
      throw new InvalidArgumentError('q is not an email address, an E.164 number or a device token', 'q');
    }
    const items: SuppressionJson[] = [];
    for (const [ch, key] of keys) {
      const found = await suppressions.reasonsOf(ch, [key]);
      const kind = found.get(key);
      if (kind !== undefined) {
        items.push({
          id: null,
          channel: ch,
          recipient: maskRecipient(ch, key),
          kind,
          source: null,
          created_at: null,
        });
      }
    }
    return items;
  }
}
