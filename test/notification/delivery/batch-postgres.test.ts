/**
 * The batch path on real PostgreSQL (issue 30, "Batch paths on PostgreSQL"): claims of a backend's
 * whole capacity from two pools at once never hand one delivery to both; group-committed outcomes
 * all land, and a claim whose process died before its outcome was written is claimable again after
 * its lease (counted as an attempt); a batch of 10,000 through the worker ends with every delivery
 * SENT and sent once.
 */
import type { Knex } from 'knex';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import { DeliveryPipeline } from '../../../services/notification/delivery/pipeline';
import { notificationMigrations } from '../../../services/notification/migrations';
import { runMigrations } from '../../../shared/storage/migrations';
import { pooledTestDatabase, type PooledTestDatabase } from '../../support/database';
import { CountingBatchDriver, ScriptedDriver, lookupOf, newBackend, testConfig, waitFor } from './support';

let db: PooledTestDatabase;

beforeAll(async () => {
  db = await pooledTestDatabase('deliverybatch', 6);
  await runMigrations(await db.pool(), notificationMigrations);
});

afterAll(async () => {
  await db?.close();
});

function items(backend: string, n: number, from = 0) {
  return Array.from({ length: n }, (_, k) => ({
    channel: 'push' as const,
    backend,
    recipient: `token-${from + k}`,
    payload: { i: from + k, title: 'Bench 📦', body: 'مرحبا 你好' },
    scope: 'batch',
  }));
}

async function pipelineOn(knex: Knex, driver: ScriptedDriver, owner: string, concurrency = 100) {
  return new DeliveryPipeline({
    store: new DatabaseDeliveryStore(knex),
    lookup: lookupOf(driver),
    config: testConfig({ concurrency, poll_interval_ms: 20, max_batch_size: 10_000 }),
    owner,
  });
}

describe('batch claims and outcomes on PostgreSQL', () => {
  it('when two pools claim a backend capacity of 100 at a time concurrently, each of 3,000 deliveries is claimed exactly once', async () => {
    const backend = newBackend('claims');
    const driver = new ScriptedDriver(backend, 'push');
    const submitter = await pipelineOn(await db.pool(), driver, 'submitter');
    const submitted = await submitter.submitBatch(items(backend, 3000));
    const stores = [new DatabaseDeliveryStore(await db.pool()), new DatabaseDeliveryStore(await db.pool())];
    const claimedBy = new Map<string, string[]>();
    const sizes: number[] = [];
    // Three claim loops per store, all at once: six claims of 100 in flight, two pools.
    await Promise.all(
      stores.flatMap((store, s) =>
        [0, 1, 2].map(async () => {
          for (;;) {
            const claimed = await store.claim({
              channel: 'push',
              backend,
              owner: `replica-${s}`,
              now: new Date(),
              leaseMs: 60_000,
              limit: 100,
            });
            if (claimed.length === 0) return;
            sizes.push(claimed.length);
            for (const r of claimed) claimedBy.set(r.id, [...(claimedBy.get(r.id) ?? []), `replica-${s}`]);
          }
        }),
      ),
    );
    expect(claimedBy.size).toBe(3000);
    expect([...claimedBy.values()].filter((owners) => owners.length !== 1)).toEqual([]);
    expect(new Set(claimedBy.keys())).toEqual(new Set(submitted.map((r) => r.delivery.id)));
    expect(Math.max(...sizes)).toBe(100);
  });

  it('when 500 outcomes arrive at once they are group-committed and every one lands; a claim whose process died is claimable after its lease', async () => {
    const backend = newBackend('outcomes');
    const driver = new ScriptedDriver(backend, 'push');
    const knex = await db.pool();
    const submitter = await pipelineOn(knex, driver, 'submitter');
    const submitted = await submitter.submitBatch(items(backend, 600));
    // The caller's clock: the lease expiry is driven by hand, no sleeping.
    const store = new DatabaseDeliveryStore(knex, { clock: 'caller' });
    const t0 = new Date();
    const claimed = await store.claim({
      channel: 'push',
      backend,
      owner: 'alive',
      now: t0,
      leaseMs: 30_000,
      limit: 500,
    });
    expect(claimed).toHaveLength(500);
    const dead = await store.claim({
      channel: 'push',
      backend,
      owner: 'dead',
      now: t0,
      leaseMs: 30_000,
      limit: 500,
    });
    expect(dead).toHaveLength(100);

    const statements: string[] = [];
    const onQuery = (q: { sql: string }) => statements.push(q.sql);
    knex.on('query', onQuery);
    const written = await Promise.all(
      claimed.map((r, k) =>
        store.completeAttempt(r.id, 'alive', {
          attempt: {
            number: 1,
            startedAt: t0,
            durationMs: 1,
            outcome: 'sent',
            backend,
            providerReference: `ref-${k} 📦`,
          },
          status: 'sent',
          nextAttemptAt: null,
          backend,
          now: t0,
        }),
      ),
    );
    knex.off('query', onQuery);
    expect(written.every((r) => r?.status === 'sent')).toBe(true);
    // Group-committed: far fewer statements than outcomes (bounded by the store's batch of 256).
    const completions = statements.filter((s) => s.includes('delivery_complete')).length;
    expect(completions).toBeGreaterThanOrEqual(2);
    expect(completions).toBeLessThan(50);
    for (const r of claimed.slice(0, 20)) {
      expect(await store.get(r.id)).toMatchObject({ status: 'sent', leaseOwner: null });
    }

    // The "dead" owner never writes. Before its lease ends nobody else gets its rows...
    const early = new Date(t0.getTime() + 29_000);
    expect(
      await store.claim({ channel: 'push', backend, owner: 'next', now: early, leaseMs: 30_000, limit: 500 }),
    ).toEqual([]);
    // ...after it, all of them, each counting the attempt the dead process started.
    const late = new Date(t0.getTime() + 30_001);
    const again = await store.claim({
      channel: 'push',
      backend,
      owner: 'next',
      now: late,
      leaseMs: 30_000,
      limit: 500,
    });
    expect(new Set(again.map((r) => r.id))).toEqual(new Set(dead.map((r) => r.id)));
    expect(again.every((r) => r.attemptsStarted === 2)).toBe(true);
    // The dead owner's late outcome is refused: the lease is no longer its.
    expect(
      await store.completeAttempt(dead[0]!.id, 'dead', {
        attempt: null,
        status: 'sent',
        nextAttemptAt: null,
        now: late,
      }),
    ).toBeNull();
    expect(submitted).toHaveLength(600);
  });

  it('when a batch of 10,000 goes through two workers, every delivery ends SENT and was sent once', async () => {
    const backend = newBackend('tenk');
    const drivers = [new CountingBatchDriver(backend), new CountingBatchDriver(backend)];
    const pipelines = [
      await pipelineOn(await db.pool(), drivers[0]!, 'replica-a'),
      await pipelineOn(await db.pool(), drivers[1]!, 'replica-b'),
    ];
    const submitted = await pipelines[0]!.submitBatch(items(backend, 10_000));
    expect(submitted.every((r) => r.created)).toBe(true);
    for (const p of pipelines) p.start();
    const sentCount = () => drivers[0]!.sent.size + drivers[1]!.sent.size;
    try {
      await waitFor(() => sentCount() >= 10_000, '10,000 sends', 120_000);
      await Promise.all(pipelines.map((p) => p.worker.idle()));
    } finally {
      await Promise.all(pipelines.map((p) => p.stop(new Date(Date.now() + 5000))));
    }
    const times = new Map<number, number>();
    for (const d of drivers) for (const [i, n] of d.sent) times.set(i, (times.get(i) ?? 0) + n);
    expect(times.size).toBe(10_000);
    expect([...times.values()].filter((n) => n !== 1)).toEqual([]);
    // Claims sized to the capacity: batches of up to 100, not one by one.
    const sizes = drivers.flatMap((d) => d.batchSizes);
    expect(Math.max(...sizes)).toBe(100);
    expect(sizes.length).toBeLessThan(1000);
    const knex = await db.pool(1);
    const rows = await knex('deliveries')
      .where({ backend })
      .groupBy('status')
      .select('status')
      .count('* as n');
    expect(rows.map((r) => [r.status, Number(r.n)])).toEqual([['sent', 10_000]]);
  });
});
