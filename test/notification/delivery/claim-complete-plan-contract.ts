/**
 * `delivery_claim` and `delivery_complete` with plans cached on empty partitions (issue 30;
 * delivery/README.md, "Sequencer plan"). Both functions keep one generic plan per connection
 * (plan_cache_mode = force_generic_plan, seqscan off), made at the connection's first call. Partitions
 * ANALYZEd while empty (reltuples 0) are planned as one row each: the join then puts a partition on
 * the outer side of its nested loop and scans its whole primary key per call (2,004 rows read for a
 * claim of one, 2,000 for a completion of one, until the next ANALYZE). Partitions never analyzed are
 * planned as at least ten pages and keep the probes by key; the partitions migration therefore
 * ANALYZEs only tables it copied rows into. Here, on ONE connection (autovacuum off, so the
 * statistics stay what the test made them): after a fresh migration, the first claim and completion
 * cached on empty partitions, then 2,000 deliveries over four weeks, claiming one and completing one
 * read a handful of rows (plan-stats.ts), not a partition; a claim of 8 over every week and its
 * completion batch (lease rules at fake times); and partitions analyzed empty, where the plans read
 * whole partitions until an ANALYZE of the filled ones (what autovacuum does after the first rows).
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import type { NewDelivery } from '../../../services/notification/delivery/store';
import { partitionsWithFrozenStats, rowsRead } from './plan-stats';

/** Week partitions the deliveries spread over. */
const WEEKS = 4;
const DAY_MS = 24 * 60 * 60 * 1000;

/** What the test needs of an engine: a migrated database on ONE connection (plans are per backend). */
export interface ClaimCompletePlanEngine {
  open(): Promise<Knex>;
  close(): Promise<void>;
}

async function one<T>(knex: Knex, sql: string, bindings: Knex.RawBinding[] = []): Promise<T> {
  const result = (await knex.raw(sql, bindings)) as { rows: T[] };
  return result.rows[0]!;
}

function delivery(backend: string, i: number, createdAt: Date): NewDelivery {
  return {
    id: randomUUID(),
    channel: 'sms',
    backend,
    recipient: `+1555${String(i).padStart(7, '0')}`,
    maskedRecipient: '***',
    scope: 'plan-hazard',
    idempotencyKey: null,
    contentHash: `h${i}`,
    payload: { body: 'ok 📦 确认 تم' },
    createdAt,
  };
}

/** Claim one (limit 1) and complete one as owner `w` on `backend`, as the worker would. */
function oneAtATime(store: DatabaseDeliveryStore, backend: string) {
  return {
    claimOne: () =>
      store.claim({ channel: 'sms', backend, owner: 'w', now: new Date(), leaseMs: 60_000, limit: 1 }),
    completeOne: (id: string, createdAt: Date) =>
      store.completeAttempt(id, 'w', {
        attempt: { number: 1, startedAt: new Date(), durationMs: 1, outcome: 'sent' },
        status: 'sent',
        nextAttemptAt: null,
        now: new Date(),
        createdAt,
      }),
  };
}

export function claimCompletePlanContract(engineName: string, engine: ClaimCompletePlanEngine): void {
  describe(`claim and completion plans cached on empty partitions (${engineName})`, () => {
    let knex: Knex;

    beforeAll(async () => {
      knex = await engine.open();
      await partitionsWithFrozenStats(knex, 'deliveries', WEEKS);
    });

    afterAll(async () => {
      await engine.close();
    });

    // First in this file: the plans this backend caches are made while every partition is empty
    // (and, after a fresh migration, never analyzed).
    test('after a fresh migration, claiming one and completing one read about one row, with plans cached on empty partitions', async () => {
      const store = new DatabaseDeliveryStore(knex, { sequencerIntervalMs: 0 });
      const backend = 'plan-hazard';
      const { claimOne, completeOne } = oneAtATime(store, backend);
      // The first claim and completion of this connection: their plans are made for empty partitions.
      expect(await claimOne()).toEqual([]);
      expect(await completeOne(randomUUID(), new Date())).toBeNull();
      // And the first claim that updates a row (its UPDATE's plan): one delivery, partitions still never analyzed.
      await store.createBatch([delivery(backend, -1, new Date(Date.now() - 60_000))]);
      const [only] = await claimOne();
      expect(only).toBeDefined();
      expect((await completeOne(only!.id, only!.createdAt))?.status).toBe('sent');

      // 2,000 deliveries over WEEKS weeks (a few minutes back, so never in a partition not made yet).
      const now = Date.now();
      const logged = 2000;
      await store.createBatch(
        Array.from({ length: logged }, (_, i) =>
          delivery(backend, i, new Date(now - 5 * 60_000 - (i % WEEKS) * 7 * DAY_MS - i * 1000)),
        ),
      );
      const { weeks } = await one<{ weeks: string | number }>(
        knex,
        `SELECT count(DISTINCT tableoid) AS weeks FROM deliveries WHERE scope = 'plan-hazard'`,
      );
      expect(Number(weeks)).toBe(WEEKS);

      const beforeClaim = await rowsRead(knex, 'deliveries');
      const [claimed] = await claimOne();
      const claimRead = (await rowsRead(knex, 'deliveries')) - beforeClaim;
      expect(claimed).toBeDefined();
      const beforeComplete = await rowsRead(knex, 'deliveries');
      const done = await completeOne(claimed!.id, claimed!.createdAt);
      const completeRead = (await rowsRead(knex, 'deliveries')) - beforeComplete;
      expect(done?.status).toBe('sent');
      console.log(`${engineName}: claim of 1 read ${claimRead} rows, completion of 1 read ${completeRead}`);
      // A plan scanning a partition per row reads hundreds to thousands (the sequencer's did).
      expect(claimRead).toBeLessThan(50);
      expect(completeRead).toBeLessThan(50);
      // Claimed once: the next claim takes another row.
      const [next] = await claimOne();
      expect(next?.id).not.toBe(claimed!.id);
    });

    // Still on the connection whose plans were cached empty: batches across every week.
    test('a claim spanning every week takes exactly the earliest due rows, leases them once, and one completion batch applies them', async () => {
      // The caller's clock: the lease rules below are checked at fake times.
      const store = new DatabaseDeliveryStore(knex, { sequencerIntervalMs: 0, clock: 'caller' });
      const backend = 'plan-span';
      const limit = 8;
      const now = Date.now();
      // limit + 1 rows, two a week; due in an order that alternates the weeks, the last past the limit.
      const made = Array.from({ length: limit + 1 }, (_, i) =>
        delivery(backend, 10_000 + i, new Date(now - 10 * 60_000 - (i % WEEKS) * 7 * DAY_MS - i * 1000)),
      );
      await store.createBatch(made);
      for (const [i, d] of made.entries()) {
        await knex.raw(
          `UPDATE deliveries SET next_attempt_at = now() - ? * interval '1 second' WHERE id = ?`,
          [100 - i, d.id],
        );
      }
      // The same id as the first row, created in another week inside the batch's range, not due: the
      // ids alone would match it; the claim must not lease it.
      const twin = new Date(now - 10 * 60_000 - 2 * 7 * DAY_MS - 500);
      await knex.raw(
        `INSERT INTO deliveries (id, channel, backend, masked_recipient, scope, content_hash, status,
           next_attempt_at, created_at, updated_at)
         VALUES (?, 'sms', ?, '***', 'plan-hazard', 'twin', 'pending', now() + interval '1 hour', ?, ?)`,
        [made[0]!.id, backend, twin.toISOString(), twin.toISOString()],
      );
      const at = (offsetMs: number) => new Date(now + offsetMs);
      const claim = (owner: string, offsetMs: number) =>
        store.claim({ channel: 'sms', backend, owner, now: at(offsetMs), leaseMs: 60_000, limit });
      const started = async () =>
        (
          (await knex.raw(
            `SELECT id, created_at, attempts_started AS n, lease_owner FROM deliveries WHERE backend = ?`,
            [backend],
          )) as { rows: { id: string; created_at: Date; n: number; lease_owner: string | null }[] }
        ).rows;

      const before = await rowsRead(knex, 'deliveries');
      const first = await claim('w1', 0);
      const claimRead = (await rowsRead(knex, 'deliveries')) - before;
      expect(first.map((r) => r.id).sort()).toEqual(
        made
          .slice(0, limit)
          .map((d) => d.id)
          .sort(),
      );
      expect(
        new Set(first.map((r) => r.createdAt.getTime() - (r.createdAt.getTime() % (7 * DAY_MS)))).size,
      ).toBeGreaterThanOrEqual(WEEKS);
      const rowsAfter = await started();
      const twinRow = rowsAfter.find((r) => r.created_at.getTime() === twin.getTime())!;
      expect(twinRow).toMatchObject({ n: 0, lease_owner: null });
      const last = rowsAfter.find((r) => r.id === made[limit]!.id)!;
      expect(last).toMatchObject({ n: 0, lease_owner: null });
      for (const r of first) {
        expect(
          rowsAfter.find((x) => x.id === r.id && x.created_at.getTime() === r.createdAt.getTime()),
        ).toMatchObject({ n: 1, lease_owner: 'w1' });
      }
      // Leased: nothing more for another worker but the one past the limit.
      expect((await claim('w2', 1000)).map((r) => r.id)).toEqual([made[limit]!.id]);
      // Lease run out: the same owner takes them again without counting a start, another owner counts one.
      expect(await claim('w1', 120_000)).toHaveLength(limit);
      expect((await started()).filter((r) => r.lease_owner === 'w1' && r.n === 1)).toHaveLength(limit);
      const third = await claim('w3', 240_000);
      expect(third).toHaveLength(limit);
      expect((await started()).filter((r) => r.lease_owner === 'w3' && r.n === 2)).toHaveLength(limit);

      // One completion batch over every week (group-committed), the twin untouched.
      const beforeComplete = await rowsRead(knex, 'deliveries');
      const done = await Promise.all(
        third.map((r) =>
          store.completeAttempt(r.id, 'w3', {
            attempt: { number: 1, startedAt: at(240_000), durationMs: 1, outcome: 'sent' },
            status: 'sent',
            nextAttemptAt: null,
            now: at(240_000),
            createdAt: r.createdAt,
          }),
        ),
      );
      const completeRead = (await rowsRead(knex, 'deliveries')) - beforeComplete;
      expect(done.map((d) => d?.status)).toEqual(third.map(() => 'sent'));
      expect((await started()).find((r) => r.created_at.getTime() === twin.getTime())).toMatchObject({
        n: 0,
        lease_owner: null,
      });
      const { n: events } = await one<{ n: string | number }>(
        knex,
        `SELECT count(*) AS n FROM delivery_events WHERE delivery_id = ANY(?::uuid[]) AND status = 'sent'`,
        [third.map((r) => r.id)],
      );
      expect(Number(events)).toBe(limit);
      console.log(
        `${engineName}: claim of ${limit} over ${WEEKS} weeks read ${claimRead} rows, completion ${completeRead}`,
      );
      // Probes by id: a few tuples a row (a partition scan would read hundreds).
      expect(claimRead).toBeLessThan(20 * limit);
      expect(completeRead).toBeLessThan(20 * limit);
    });

    // Migration 20261201000000: the due index orders a backend's rows by GREATEST(next_attempt_at,
    // lease_expires_at), so attempts in flight sit at their lease expiry, not at the head.
    test('with 1,000 attempts in flight at the head of a backend, a claim and a poll read a handful of rows, not the leased ones', async () => {
      const store = new DatabaseDeliveryStore(knex, { sequencerIntervalMs: 0 });
      const backend = 'plan-inflight';
      const inFlight = 1000;
      const now = Date.now();
      await store.createBatch(
        Array.from({ length: inFlight }, (_, i) => delivery(backend, 20_000 + i, new Date(now - 60_000))),
      );
      const claim = (owner: string, limit: number) =>
        store.claim({ channel: 'sms', backend, owner, now: new Date(), leaseMs: 60_000, limit });
      expect(await claim('held', inFlight)).toHaveLength(inFlight);
      // Due after every leased row (by next_attempt_at): the one row a claim may take.
      const [late] = await store.createBatch([delivery(backend, 30_000, new Date(now - 30_000))]);

      const beforePoll = await rowsRead(knex, 'deliveries');
      const due = await store.dueBackends(new Date());
      const pollRead = (await rowsRead(knex, 'deliveries')) - beforePoll;
      expect(due).toContainEqual({ channel: 'sms', backend });
      const beforeClaim = await rowsRead(knex, 'deliveries');
      const taken = await claim('other', 8);
      const claimRead = (await rowsRead(knex, 'deliveries')) - beforeClaim;
      expect(taken.map((r) => r.id)).toEqual([late!.record.id]);
      // Nothing left to take: the empty claim and the poll find the backend's leased rows no more.
      const beforeEmpty = await rowsRead(knex, 'deliveries');
      expect(await claim('third', 8)).toEqual([]);
      expect((await store.dueBackends(new Date())).filter((d) => d.backend === backend)).toEqual([]);
      const emptyRead = (await rowsRead(knex, 'deliveries')) - beforeEmpty;
      console.log(
        `${engineName}: ${inFlight} in flight: poll read ${pollRead} rows, claim of 1 ${claimRead}, empty claim + poll ${emptyRead}`,
      );
      // Stepping over the leased rows reads each of them (1,000 and more).
      expect(pollRead).toBeLessThan(50);
      expect(claimRead).toBeLessThan(50);
      expect(emptyRead).toBeLessThan(50);
    });

    // Last: it empties the table. A DBA's ANALYZE of an empty database (or of a table before its
    // first rows) makes the partitions "known empty"; plans cached then read whole partitions until
    // the next ANALYZE, which autovacuum runs once a partition has taken its first rows (50 changes,
    // at most autovacuum_naptime later): a bounded transient, not fixed by the functions (planning
    // per call or updating row by row cost 2-5x the PostgreSQL CPU per message on every call).
    test('partitions ANALYZEd empty: once the filled partitions are analyzed, the plans probe by key again', async () => {
      const store = new DatabaseDeliveryStore(knex, { sequencerIntervalMs: 0 });
      const backend = 'plan-analyzed';
      await knex.raw('DELETE FROM deliveries');
      await knex.raw('ANALYZE deliveries');
      const { claimOne, completeOne } = oneAtATime(store, backend);
      // Plans made now (the ANALYZE invalidated the earlier ones) are made for known-empty partitions.
      expect(await claimOne()).toEqual([]);
      expect(await completeOne(randomUUID(), new Date())).toBeNull();
      const now = Date.now();
      await store.createBatch(
        Array.from({ length: 2000 }, (_, i) =>
          delivery(backend, i, new Date(now - 5 * 60_000 - (i % WEEKS) * 7 * DAY_MS - i * 1000)),
        ),
      );
      const reads = async (): Promise<{ claim: number; complete: number }> => {
        const beforeClaim = await rowsRead(knex, 'deliveries');
        const [claimed] = await claimOne();
        const claim = (await rowsRead(knex, 'deliveries')) - beforeClaim;
        expect(claimed).toBeDefined();
        const beforeComplete = await rowsRead(knex, 'deliveries');
        expect((await completeOne(claimed!.id, claimed!.createdAt))?.status).toBe('sent');
        return { claim, complete: (await rowsRead(knex, 'deliveries')) - beforeComplete };
      };
      const stale = await reads();
      // What autovacuum does once the partitions have rows: new statistics, the cached plans dropped.
      await knex.raw('ANALYZE deliveries');
      const fresh = await reads();
      console.log(
        `${engineName}: analyzed empty, claim/completion of 1 read ${stale.claim}/${stale.complete} rows; after ANALYZE ${fresh.claim}/${fresh.complete}`,
      );
      expect(fresh.claim).toBeLessThan(50);
      expect(fresh.complete).toBeLessThan(50);
    });
  });
}
