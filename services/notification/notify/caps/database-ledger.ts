/**
 * DatabaseCapLedger: the frequency caps in PostgreSQL (pg) or the embedded PGlite, through knex
 * (migration 20261128000100_notify_caps). One take is ONE transaction, serialised per (user,
 * channel) across replicas by a transaction-scoped advisory lock on the pair's hash: it reads the
 * database's clock after taking the lock, deletes the pair's takes older than the channel's longest
 * window, reads the newest ones left, and inserts its own row only when every cap has room. Two
 * replicas taking the last slot at once: the second waits for the first's commit and sees its row.
 */
import type { Knex } from 'knex';
import type { CapConfig } from '../config';
import type { CapDecision, CapLedger, TimedChannel } from '../timing';
import { capsByChannel, decide, longestWindow, takesNeeded } from './rules';
import { rows } from '../../../../shared/storage/database';

/** Options of DatabaseCapLedger. */
export interface DatabaseCapLedgerOptions {
  caps: readonly CapConfig[];
  /**
   * Tests only: the time a take is made at, instead of the database's clock (so a manual clock can
   * move the windows). Production leaves it unset: replicas agree on the database's time.
   */
  now?: () => Date;
}

/** The knex-backed CapLedger. */
export class DatabaseCapLedger implements CapLedger {
  private readonly caps: Map<TimedChannel, CapConfig[]>;

  constructor(
    private readonly knex: Knex,
    private readonly options: DatabaseCapLedgerOptions,
  ) {
    this.caps = capsByChannel(options.caps);
  }

  async take(userId: string, channel: TimedChannel): Promise<CapDecision> {
    const caps = this.caps.get(channel);
    if (!caps) return { taken: true };
    return this.knex.transaction(async (trx) => {
      await trx.raw(`SELECT pg_advisory_xact_lock(hashtext('notify_cap_takes'), hashtext(?::text))`, [
        `${channel}:${userId}`,
      ]);
      // "now" is read after the lock: a take that waited is later than the one it waited for.
      const override = this.options.now?.();
      // As text: a JS Date would drop the microseconds the rows keep.
      const [clock] = rows<{ now: string; now_us: string | number }>(
        await trx.raw(
          `SELECT t::text AS now, (extract(epoch FROM t) * 1000000)::bigint AS now_us
           FROM (SELECT COALESCE(?::timestamptz, clock_timestamp()) AS t) AS c`,
          [override ? override.toISOString() : null],
        ),
      );
      const now = clock!.now;
      const window = longestWindow(caps);
      await trx.raw(
        `DELETE FROM notify_cap_takes
         WHERE user_id = ? AND channel = ? AND taken_at <= ?::timestamptz - make_interval(secs => ?)`,
        [userId, channel, now, window],
      );
      const newest = rows<{ us: string | number }>(
        await trx.raw(
          `SELECT (extract(epoch FROM taken_at) * 1000000)::bigint AS us FROM notify_cap_takes
           WHERE user_id = ? AND channel = ?
           ORDER BY taken_at DESC LIMIT ?`,
          [userId, channel, takesNeeded(caps)],
        ),
      ).map((r) => Number(r.us));
      const decision = decide(caps, newest, Number(clock!.now_us));
      if (decision.taken) {
        await trx.raw(
          'INSERT INTO notify_cap_takes (user_id, channel, taken_at) VALUES (?, ?, ?::timestamptz)',
          [userId, channel, now],
        );
      }
      return decision;
    });
  }

  async eraseUser(userId: string): Promise<void> {
    await this.knex.raw('DELETE FROM notify_cap_takes WHERE user_id = ?', [userId]);
  }
}
