/**
 * The DigestBook on PostgreSQL or PGlite (knex): tables `notification_digests` and
 * `notification_digest_events` (migration `20261128000300_notify_digests`). How concurrent replicas
 * stay correct (README.md, "Digests"):
 * - an event joins a digest by `UPDATE ... SET event_count = event_count + 1 WHERE status = 'open' AND
 *   accepting`, which locks the digest row and re-checks it after any wait, and inserts the event in
 *   the same transaction: a claim that takes the digest either waits for the add (the event is in it)
 *   or comes first (the add finds it taken and places the event again: the next digest);
 * - a new digest is the key's one head (unique partial index): concurrent creators race with
 *   `INSERT ... ON CONFLICT DO NOTHING`, the losers read again and join the winner;
 * - an event is in one digest only (unique (notification_id, channel));
 * - "now" (due times, leases, a late event's window) is the database's `now()`.
 */
import type { Knex } from 'knex';
import { UnavailableError } from '../../../../shared/errors';
import { toDate, toNumber, rows } from '../../../../shared/storage/database';
import { isUuid, newId } from '../../../../shared/runtime/ids';
import type { CategoryConfig } from '../config';
import type { DigestEvent, DigestState, DueDigest, TimedChannel } from '../timing';
import type { DigestStore } from './store';
import { DigestRules, eventData, MAX_DIGEST_DATA_BYTES, storedKey } from './rules';
import { placeEvent } from './window';

/** Placement attempts of one add before it gives up (UNAVAILABLE); each is a lost race. */
const MAX_ATTEMPTS = 50;

interface DigestRow {
  id: string;
  scope: string;
  user_id: string;
  category: string;
  channel: TimedChannel;
  digest_key: string;
  window_start: Date | string;
  status: DigestState['status'];
  flush_at: Date | string;
  event_count: number | string;
  message_id: string | null;
  error: string | null;
}

interface EventRow {
  digest_id: string;
  notification_id: string;
  occurred_at: Date | string;
  data: Record<string, unknown> | string;
}

const UNIQUE_VIOLATION = '23505';

/**
 * `UPDATE ... SET` of an event joining a digest (the caller adds `WHERE`): one more event and its
 * bytes; at `maxCount` or {@link MAX_DIGEST_DATA_BYTES} the digest is full: due now, taking no more.
 */
function joinStatement(maxCount: number, bytes: number): { sql: string; args: number[] } {
  const FULL = `(event_count + 1 >= ? OR data_bytes + ? >= ?)`;
  const fullArgs = [maxCount, bytes, MAX_DIGEST_DATA_BYTES];
  return {
    sql: `UPDATE notification_digests SET event_count = event_count + 1, data_bytes = data_bytes + ?,
      accepting = NOT ${FULL}, head = head AND NOT ${FULL},
      flush_at = CASE WHEN ${FULL} THEN LEAST(flush_at, now()) ELSE flush_at END, updated_at = now()`,
    args: [bytes, ...fullArgs, ...fullArgs, ...fullArgs],
  };
}

/** The same (notification, channel) was added concurrently: the transaction is rolled back and redone. */
class EventRace extends Error {}

/** The DigestBook on PostgreSQL or PGlite. */
export class DatabaseDigestBook implements DigestStore {
  private readonly knex: Knex;
  private readonly rules: DigestRules;

  constructor(options: { knex: Knex; categories: readonly CategoryConfig[] }) {
    this.knex = options.knex;
    this.rules = new DigestRules(options.categories);
  }

  async add(event: DigestEvent): Promise<{ digestId: string; flushAt: Date }> {
    const config = this.rules.configOf(event.category, event.channel);
    const { json, bytes } = eventData(event);
    const key = storedKey(event.key);
    const keyArgs = [event.scope, event.userId, event.category, event.channel, key];
    const KEY = 'scope = ? AND user_id = ? AND category = ? AND channel = ? AND digest_key = ?';
    const t = event.occurredAt;
    const fast = await this.joinHolding(event, key, config.max_count, json, bytes);
    if (fast) return fast;
    for (let redo = 0; ; redo++) {
      try {
        return await this.knex.transaction(async (trx) => {
          const [existing] = rows<{ id: string; flush_at: Date | string }>(
            await trx.raw(
              `SELECT d.id, d.flush_at FROM notification_digest_events e
               JOIN notification_digests d ON d.id = e.digest_id
               WHERE e.notification_id = ? AND e.channel = ?`,
              [event.notificationId, event.channel],
            ),
          );
          if (existing) return { digestId: existing.id, flushAt: toDate(existing.flush_at) };
          for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
            // Each statement reads what committed before it (READ COMMITTED): a lost race is seen here.
            const found = rows<{
              now: Date | string;
              id: string | null;
              window_start: Date | string;
              window_end: Date | string;
            }>(
              await trx.raw(
                `SELECT clock.now, d.id, d.window_start, d.window_end
                 FROM (SELECT now() AS now) clock
                 LEFT JOIN notification_digests d ON d.${KEY.replaceAll(' AND ', ' AND d.')} AND d.accepting`,
                keyArgs,
              ),
            );
            const now = toDate(found[0]!.now);
            const accepting = found
              .filter((r) => r.id !== null)
              .map((r) => ({ id: r.id!, start: toDate(r.window_start), end: toDate(r.window_end) }));
            const placed = placeEvent(t, now, accepting, config, event.timeZone);
            let digestId: string;
            if ('join' in placed) {
              digestId = placed.join;
            } else {
              // The head whose window ended before the event stops being the head (it still takes
              // late events of its own window until it is taken); then the race to be the new head.
              await trx.raw(
                `UPDATE notification_digests SET head = false, updated_at = now()
                 WHERE ${KEY} AND head AND window_end <= ?`,
                [...keyArgs, t.toISOString()],
              );
              const [created] = rows<{ id: string }>(
                await trx.raw(
                  `INSERT INTO notification_digests (id, scope, user_id, category, channel, digest_key,
                     window_start, window_end, flush_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT DO NOTHING RETURNING id`,
                  [
                    newId(),
                    ...keyArgs,
                    placed.open.start.toISOString(),
                    placed.open.end.toISOString(),
                    placed.open.end.toISOString(),
                  ],
                ),
              );
              if (!created) continue;
              digestId = created.id;
            }
            const join = joinStatement(config.max_count, bytes);
            const [joined] = rows<{ id: string; flush_at: Date | string }>(
              await trx.raw(
                `${join.sql} WHERE id = ? AND status = 'open' AND accepting RETURNING id, flush_at`,
                [...join.args, digestId],
              ),
            );
            if (!joined) continue;
            const inserted = rows(
              await trx.raw(
                `INSERT INTO notification_digest_events (digest_id, notification_id, channel, occurred_at, data,
                   data_bytes)
                 VALUES (?, ?, ?, ?, ?::jsonb, ?) ON CONFLICT DO NOTHING RETURNING digest_id`,
                [digestId, event.notificationId, event.channel, t.toISOString(), json, bytes],
              ),
            );
            if (inserted.length === 0) throw new EventRace();
            return { digestId: joined.id, flushAt: toDate(joined.flush_at) };
          }
          throw new UnavailableError('the digest is busy: try again');
        });
      } catch (err) {
        if (err instanceof EventRace && redo < MAX_ATTEMPTS) continue;
        throw err;
      }
    }
  }

  /**
   * The common case in one statement (no transaction): the event is new and an accepting digest of
   * the key holds its time. The same join as below (row lock, re-checked after a wait) and the event's
   * insert commit together; an event already added fails the insert (unique), which undoes the join.
   * Undefined when the case does not apply: the full placement runs.
   */
  private async joinHolding(
    event: DigestEvent,
    key: string,
    maxCount: number,
    json: string,
    bytes: number,
  ): Promise<{ digestId: string; flushAt: Date } | undefined> {
    const join = joinStatement(maxCount, bytes);
    const t = event.occurredAt.toISOString();
    try {
      const [joined] = rows<{ id: string; flush_at: Date | string }>(
        await this.knex.raw(
          `WITH target AS (
             SELECT id FROM notification_digests
             WHERE scope = ? AND user_id = ? AND category = ? AND channel = ? AND digest_key = ? AND accepting
               AND window_start <= ? AND ? < window_end
             LIMIT 1
           ), joined AS (
             ${join.sql} WHERE id = (SELECT id FROM target) AND status = 'open' AND accepting
             RETURNING id, flush_at
           ), added AS (
             INSERT INTO notification_digest_events (digest_id, notification_id, channel, occurred_at, data,
               data_bytes)
             SELECT id, ?, ?, ?, ?::jsonb, ? FROM joined RETURNING digest_id
           )
           SELECT joined.id, joined.flush_at FROM joined JOIN added ON added.digest_id = joined.id`,
          [
            event.scope,
            event.userId,
            event.category,
            event.channel,
            key,
            t,
            t,
            ...join.args,
            event.notificationId,
            event.channel,
            t,
            json,
            bytes,
          ],
        ),
      );
      return joined ? { digestId: joined.id, flushAt: toDate(joined.flush_at) } : undefined;
    } catch (err) {
      if ((err as { code?: unknown }).code === UNIQUE_VIOLATION) return undefined;
      throw err;
    }
  }

  async claimDue(owner: string, leaseMs: number, limit: number): Promise<DueDigest[]> {
    return this.knex.transaction(async (trx) => {
      const taken = rows<DigestRow>(
        await trx.raw(
          `UPDATE notification_digests SET status = 'sending', head = false, accepting = false, lease_owner = ?,
             lease_expires_at = now() + (? * interval '1 millisecond'), updated_at = now()
           WHERE id IN (
             SELECT id FROM notification_digests
             WHERE (status = 'open' AND flush_at <= now()) OR (status = 'sending' AND lease_expires_at <= now())
             ORDER BY flush_at LIMIT ? FOR UPDATE SKIP LOCKED)
           RETURNING *`,
          [owner, leaseMs, Math.max(0, limit)],
        ),
      );
      if (taken.length === 0) return [];
      const events = rows<EventRow>(
        await trx.raw(
          `SELECT digest_id, notification_id, occurred_at, data FROM notification_digest_events
           WHERE digest_id IN (${taken.map(() => '?').join(', ')})
           ORDER BY digest_id, occurred_at, seq`,
          taken.map((d) => d.id),
        ),
      );
      const byDigest = new Map<string, DueDigest['events']>();
      for (const e of events) {
        let list = byDigest.get(e.digest_id);
        if (!list) byDigest.set(e.digest_id, (list = []));
        list.push({
          notificationId: e.notification_id,
          occurredAt: toDate(e.occurred_at),
          data: typeof e.data === 'string' ? (JSON.parse(e.data) as Record<string, unknown>) : e.data,
        });
      }
      return taken
        .sort((a, b) => toDate(a.flush_at).getTime() - toDate(b.flush_at).getTime())
        .map((d) => ({
          id: d.id,
          scope: d.scope,
          userId: d.user_id,
          category: d.category,
          channel: d.channel,
          key: d.digest_key,
          windowStart: toDate(d.window_start),
          events: byDigest.get(d.id) ?? [],
        }));
    });
  }

  async finish(
    digestId: string,
    owner: string,
    messageId: string | null,
    error: string | null,
  ): Promise<boolean> {
    return (
      rows(
        await this.knex.raw(
          `UPDATE notification_digests SET status = 'sent', message_id = ?, error = ?, lease_owner = NULL,
             lease_expires_at = NULL, updated_at = now()
           WHERE id = ? AND status = 'sending' AND lease_owner = ? RETURNING id`,
          [messageId, error, digestId, owner],
        ),
      ).length === 1
    );
  }

  async defer(digestId: string, owner: string, until: Date): Promise<boolean> {
    // Back to open but not accepting: events meanwhile open the next digest.
    return (
      rows(
        await this.knex.raw(
          `UPDATE notification_digests SET status = 'open', flush_at = ?, lease_owner = NULL,
             lease_expires_at = NULL, updated_at = now()
           WHERE id = ? AND status = 'sending' AND lease_owner = ? RETURNING id`,
          [until.toISOString(), digestId, owner],
        ),
      ).length === 1
    );
  }

  async get(digestId: string): Promise<DigestState | null> {
    if (!isUuid(digestId)) return null;
    const [d] = rows<DigestRow>(
      await this.knex.raw(
        `SELECT id, status, flush_at, event_count, message_id, error FROM notification_digests WHERE id = ?`,
        [digestId],
      ),
    );
    if (!d) return null;
    return {
      id: d.id,
      status: d.status,
      flushAt: toDate(d.flush_at),
      count: toNumber(d.event_count),
      messageId: d.message_id,
      error: d.error,
    };
  }

  async removeNotification(notificationId: string): Promise<number> {
    return this.knex.transaction(async (trx) => {
      // The digests first, locked: a claim either took them before (their events stay) or waits.
      const open = rows<{ id: string }>(
        await trx.raw(
          `SELECT d.id FROM notification_digests d
           JOIN notification_digest_events e ON e.digest_id = d.id
           WHERE e.notification_id = ? AND d.status = 'open'
           ORDER BY d.id FOR UPDATE OF d`,
          [notificationId],
        ),
      );
      if (open.length === 0) return 0;
      const ids = [...new Set(open.map((d) => d.id))];
      const gone = rows<{ digest_id: string; data_bytes: number | string }>(
        await trx.raw(
          `DELETE FROM notification_digest_events
           WHERE notification_id = ? AND digest_id IN (${ids.map(() => '?').join(', ')})
           RETURNING digest_id, data_bytes`,
          [notificationId, ...ids],
        ),
      );
      const per = new Map<string, { n: number; bytes: number }>();
      for (const g of gone) {
        const p = per.get(g.digest_id) ?? { n: 0, bytes: 0 };
        p.n += 1;
        p.bytes += toNumber(g.data_bytes);
        per.set(g.digest_id, p);
      }
      for (const [id, p] of per) {
        // The last event out cancels the digest (nothing left to send).
        await trx.raw(
          `UPDATE notification_digests SET event_count = event_count - ?, data_bytes = data_bytes - ?,
             status = CASE WHEN event_count - ? <= 0 THEN 'cancelled' ELSE status END,
             head = head AND event_count - ? > 0, accepting = accepting AND event_count - ? > 0,
             updated_at = now()
           WHERE id = ?`,
          [p.n, p.bytes, p.n, p.n, p.n, id],
        );
      }
      return gone.length;
    });
  }

  async purgeFinished(before: Date, limit: number): Promise<number> {
    // The events go with their digests (ON DELETE CASCADE).
    return rows(
      await this.knex.raw(
        `DELETE FROM notification_digests WHERE id IN (
           SELECT id FROM notification_digests
           WHERE status IN ('sent', 'cancelled') AND updated_at < ?
           ORDER BY updated_at LIMIT ?)
         RETURNING id`,
        [before.toISOString(), Math.max(0, limit)],
      ),
    ).length;
  }

  async eraseUser(userId: string): Promise<void> {
    // The events go with their digests (ON DELETE CASCADE).
    await this.knex.raw('DELETE FROM notification_digests WHERE user_id = ?', [userId]);
  }
}
