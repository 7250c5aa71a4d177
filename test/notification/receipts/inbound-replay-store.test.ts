/**
 * The inbound replay stores (delivery/inbound-replay*.ts): an id is new once per backend within the
 * retention, concurrent deliveries of one callback make exactly one new, a forgotten id is new again,
 * and both stores stay bounded (memory: by count and age; database: rows past the retention are taken
 * over as new and pruned, by the database's clock). The database store runs on real PostgreSQL.
 */
import type { Knex } from 'knex';
import { DatabaseInboundReplayStore } from '../../../services/notification/delivery/inbound-replay-database-store';
import { InMemoryInboundReplayStore } from '../../../services/notification/delivery/inbound-replay-memory-store';
import type { InboundReplayStore } from '../../../services/notification/delivery/inbound-replay';
import { notificationMigrations } from '../../../services/notification/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { createTestDatabase } from '../../support/database';

let knex: Knex;
let drop: () => Promise<void>;

beforeAll(async () => {
  const db = await createTestDatabase('inbound_replay_store');
  drop = db.drop;
  knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 4 }, silentLogger());
  await runMigrations(knex, notificationMigrations);
});

afterAll(async () => {
  await knex?.destroy();
  await drop?.();
});

describe.each([
  ['InMemoryInboundReplayStore', () => new InMemoryInboundReplayStore()],
  ['DatabaseInboundReplayStore on PostgreSQL', () => new DatabaseInboundReplayStore(knex)],
] as const)('%s', (_name, make: () => InboundReplayStore) => {
  it('when an id arrives twice on one backend, only the first is new; on another backend it is new again', async () => {
    const store = make();
    expect(await store.remember('twilio', 'inbound:SM1')).toBe(true);
    expect(await store.remember('twilio', 'inbound:SM1')).toBe(false);
    expect(await store.remember('twilio-eu', 'inbound:SM1')).toBe(true);
  });

  it('when one callback is delivered 20 times at once, exactly one is new', async () => {
    const store = make();
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => store.remember('twilio', 'status:SM2:delivered')),
    );
    expect(answers.filter(Boolean)).toHaveLength(1);
  });

  it('when an id is forgotten (its callback failed), the provider retry is new', async () => {
    const store = make();
    expect(await store.remember('twilio', 'inbound:SM3')).toBe(true);
    await store.forget('twilio', 'inbound:SM3');
    expect(await store.remember('twilio', 'inbound:SM3')).toBe(true);
    expect(await store.remember('twilio', 'inbound:SM3')).toBe(false);
  });

  it('keeps ids with emoji, CJK and RTL text whole', async () => {
    const store = make();
    const id = 'inbound:SM😀漢字שלום';
    expect(await store.remember('twilio', id)).toBe(true);
    expect(await store.remember('twilio', id)).toBe(false);
    expect(await store.remember('twilio', 'inbound:SM😀漢字שלו')).toBe(true);
  });
});

describe('InMemoryInboundReplayStore bounds', () => {
  it('when the retention has passed, an id is new again and the old ones are dropped', async () => {
    let now = Date.parse('2026-11-26T12:00:00Z');
    const store = new InMemoryInboundReplayStore({
      retentionHours: 1,
      clock: { now: () => now, monotonic: () => now },
    });
    expect(await store.remember('twilio', 'a')).toBe(true);
    now += 30 * 60_000;
    expect(await store.remember('twilio', 'b')).toBe(true);
    expect(await store.remember('twilio', 'a')).toBe(false);
    now += 31 * 60_000; // a is 61 minutes old, b 31
    expect(await store.remember('twilio', 'a')).toBe(true);
    expect(await store.remember('twilio', 'b')).toBe(false);
    expect(store.size).toBe(2);
  });

  it('when full, the oldest id is forgotten and the size stays at the cap', async () => {
    const store = new InMemoryInboundReplayStore({ maxEntries: 3 });
    for (const id of ['a', 'b', 'c', 'd']) expect(await store.remember('twilio', id)).toBe(true);
    expect(store.size).toBe(3);
    expect(await store.remember('twilio', 'd')).toBe(false);
    expect(await store.remember('twilio', 'b')).toBe(false);
    expect(await store.remember('twilio', 'a')).toBe(true);
    expect(store.size).toBe(3);
  });
});

describe('DatabaseInboundReplayStore retention', () => {
  const age = (backend: string, hours: number) =>
    knex.raw(`UPDATE inbound_receipts SET seen_at = now() - make_interval(hours => ?) WHERE backend = ?`, [
      hours,
      backend,
    ]);
  const rowsOf = async (backend: string) =>
    Number(
      (
        (await knex.raw('SELECT count(*) AS n FROM inbound_receipts WHERE backend = ?', [backend])) as {
          rows: Array<{ n: string }>;
        }
      ).rows[0]!.n,
    );

  it('when a row is older than the retention (by the database clock), the id is new again', async () => {
    const store = new DatabaseInboundReplayStore(knex, { retentionHours: 24, pruneIntervalMs: 3_600_000 });
    expect(await store.remember('old-a', 'inbound:SMx')).toBe(true);
    await age('old-a', 23);
    expect(await store.remember('old-a', 'inbound:SMx')).toBe(false);
    await age('old-a', 25);
    expect(await store.remember('old-a', 'inbound:SMx')).toBe(true);
    expect(await store.remember('old-a', 'inbound:SMx')).toBe(false);
  });

  it('prune deletes every row past the retention in bounded batches and keeps the rest', async () => {
    const store = new DatabaseInboundReplayStore(knex, { retentionHours: 24, pruneIntervalMs: 3_600_000 });
    await knex.raw(
      `INSERT INTO inbound_receipts (backend, receipt_id, seen_at)
       SELECT 'old-b', 'inbound:SM' || g, now() - interval '48 hours' FROM generate_series(1, 2500) g`,
    );
    expect(await store.remember('old-b', 'inbound:fresh')).toBe(true);
    await store.settled();
    await store.prune();
    expect(await rowsOf('old-b')).toBe(1);
    expect(await store.remember('old-b', 'inbound:fresh')).toBe(false);
  });
});
