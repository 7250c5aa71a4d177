/**
 * The event sequencer's cost does not grow with the log (issue 30; delivery/README.md, "Sequencer
 * plan"). The statistics are those of an ANALYZE run during a burst (every event still unnumbered),
 * which once made the sequencer's generic plan hash the whole event log on every pass that numbered
 * anything. A pass that numbers one event must read about one event: counted in live rows read
 * (plan-stats.ts: pg_stat_user_tables), not timed. And the passes are counted: one per batch
 * until a short one, none while nothing is written.
 */
import type { Knex } from 'knex';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import { partitionsWithFrozenStats, rowsRead } from './plan-stats';

/** Week partitions the events spread over. */
const WEEKS = 4;

/** What the test needs of an engine: a migrated database on ONE connection (stats are per backend). */
export interface SequencerPlanEngine {
  open(): Promise<Knex>;
  close(): Promise<void>;
}

async function one<T>(knex: Knex, sql: string, bindings: Knex.RawBinding[] = []): Promise<T> {
  const result = (await knex.raw(sql, bindings)) as { rows: T[] };
  return result.rows[0]!;
}

async function insertEvents(knex: Knex, count: number): Promise<void> {
  // Over WEEKS week partitions (a few minutes back, so never in a partition not made yet).
  await knex.raw(
    `INSERT INTO delivery_events (delivery_id, scope, channel, backend, status, reason, occurred_at)
     SELECT gen_random_uuid(), 'seq-plan', 'sms', 'b', 'sent', 'ok 📦 确认 تم',
       now() - interval '5 minutes' - (g % ${WEEKS}) * interval '7 days'
     FROM generate_series(1, ?) AS g`,
    [count],
  );
}

export function sequencerPlanContract(engineName: string, engine: SequencerPlanEngine): void {
  describe(`event sequencer plan (${engineName})`, () => {
    let knex: Knex;

    beforeAll(async () => {
      knex = await engine.open();
      await partitionsWithFrozenStats(knex, 'delivery_events', WEEKS);
    });

    afterAll(async () => {
      await engine.close();
    });

    // First in this file: the plan this backend caches is made while every partition is empty.
    test('a pass numbering one event reads about one event, with a plan cached on empty partitions', async () => {
      const store = new DatabaseDeliveryStore(knex, { sequencerIntervalMs: 0, sequencerBatchSize: 5000 });
      // The first pass of this connection: the log is empty and known to be (analyzed empty, as
      // autovacuum leaves a fresh deployment's or a new week's partition), so its plan is made for
      // one row a partition.
      await knex.raw('ANALYZE delivery_events');
      await store.sequenceEvents();
      expect(await store.latestEventSeq()).toBe(0);
      const logged = 2000;
      await insertEvents(knex, logged);
      await store.sequenceEvents();
      expect(await store.latestEventSeq()).toBe(logged);
      // The numbered rows' entries stay in the unnumbered index until vacuum: the next scan steps
      // over them once and marks them dead, as any later pass would.
      await store.sequenceEvents();
      await insertEvents(knex, 1);
      const before = await rowsRead(knex, 'delivery_events');
      await store.sequenceEvents();
      const read = (await rowsRead(knex, 'delivery_events')) - before;
      expect(await store.latestEventSeq()).toBe(logged + 1);
      // A join planned for empty partitions scanned a partition's whole primary key per pending row.
      expect(read).toBeLessThan(50);
      await knex.raw(`DELETE FROM delivery_events WHERE scope = 'seq-plan'`);
    });

    test('a pass numbering one event reads about one event, not the log (burst statistics)', async () => {
      const store = new DatabaseDeliveryStore(knex, { sequencerIntervalMs: 0, sequencerBatchSize: 1000 });
      const seq0 = await store.latestEventSeq();
      const logged = 4000;
      await insertEvents(knex, logged);
      await knex.raw('ANALYZE delivery_events');
      await store.sequenceEvents();
      expect(await store.latestEventSeq()).toBe(seq0 + logged);

      for (const round of [1, 2]) {
        await insertEvents(knex, 1);
        const before = await rowsRead(knex, 'delivery_events');
        await store.sequenceEvents();
        const read = (await rowsRead(knex, 'delivery_events')) - before;
        expect(await store.latestEventSeq()).toBe(seq0 + logged + round);
        // The pending scan and one probe (plus a few index entries not yet marked dead); the plan that
        // hashed the log read every one of the `logged` events.
        expect(read).toBeLessThan(50);
      }
      // An empty pass reads next to nothing and numbers nothing.
      const before = await rowsRead(knex, 'delivery_events');
      await store.sequenceEvents();
      expect((await rowsRead(knex, 'delivery_events')) - before).toBeLessThan(50);
      expect(await store.latestEventSeq()).toBe(seq0 + logged + 2);
      const { gaps } = await one<{ gaps: string | number }>(
        knex,
        `SELECT count(*) - count(DISTINCT seq) + (max(seq) - min(seq) + 1 - count(*)) AS gaps
         FROM delivery_events WHERE scope = 'seq-plan'`,
      );
      expect(Number(gaps)).toBe(0);
    });

    test('a pass numbering a few hundred events reads a few per event (statistics after VACUUM)', async () => {
      const store = new DatabaseDeliveryStore(knex, { sequencerIntervalMs: 0, sequencerBatchSize: 1000 });
      await store.sequenceEvents();
      // The statistics now expect next to nothing pending (the partial index of unnumbered rows is
      // empty): a plan that scanned that whole index once per pending row read 300 x 300 tuples.
      await knex.raw('VACUUM ANALYZE delivery_events');
      const pending = 300;
      await insertEvents(knex, pending);
      const seq0 = await store.latestEventSeq();
      const before = await rowsRead(knex, 'delivery_events');
      await store.sequenceEvents();
      const read = (await rowsRead(knex, 'delivery_events')) - before;
      expect(await store.latestEventSeq()).toBe(seq0 + pending);
      expect(read).toBeLessThan(pending * 10);
    });

    test('passes: one per batch until a short one, one for an empty log, none after (idle)', async () => {
      const store = new DatabaseDeliveryStore(knex, { sequencerIntervalMs: 0, sequencerBatchSize: 1000 });
      await store.sequenceEvents();
      let passes = 0;
      const count = (q: { sql?: string }) => {
        if (q.sql?.includes('delivery_events_sequence')) passes++;
      };
      knex.on('query', count);
      try {
        const passesFor = async (events: number) => {
          if (events > 0) await insertEvents(knex, events);
          const seq0 = await store.latestEventSeq();
          passes = 0;
          await store.sequenceEvents();
          expect(await store.latestEventSeq()).toBe(seq0 + events);
          const made = passes;
          // Nothing more runs on its own once the passes are done (an idle process numbers nothing).
          for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
          expect(passes).toBe(made);
          return made;
        };
        expect(await passesFor(0)).toBe(1);
        expect(await passesFor(999)).toBe(1);
        // A full batch may not be all: one more pass, which finds nothing (or the one left).
        expect(await passesFor(1000)).toBe(2);
        expect(await passesFor(1001)).toBe(2);
        expect(await passesFor(2500)).toBe(3);
        // Calls while a pass runs share it and ask for one more, not one each.
        passes = 0;
        await Promise.all(Array.from({ length: 10 }, () => store.sequenceEvents()));
        expect(passes).toBe(2);
      } finally {
        knex.off('query', count);
      }
    });
  });
}
