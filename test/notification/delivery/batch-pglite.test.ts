/**
 * The batch path on the embedded PGlite (issue 30, "Batch paths on PostgreSQL"): one connection, so
 * claims, sends and group-committed outcomes share it; a batch of 10,000 still ends with every
 * delivery SENT and sent once.
 */
import type { Knex } from 'knex';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import { DeliveryPipeline } from '../../../services/notification/delivery/pipeline';
import { CountingBatchDriver, lookupOf, requireVmModules, testConfig, waitFor } from './support';
import { migratedPglite } from '../../support/database';

let knex: Knex;

beforeAll(async () => {
  requireVmModules();
  knex = await migratedPglite('notification');
});

afterAll(async () => {
  await knex?.destroy();
});

test('on PGlite, when a batch of 10,000 goes through the worker, every delivery ends SENT and was sent once', async () => {
  const driver = new CountingBatchDriver('apns');
  const pipeline = new DeliveryPipeline({
    store: new DatabaseDeliveryStore(knex),
    lookup: lookupOf(driver),
    config: testConfig({ concurrency: 100, poll_interval_ms: 20, max_batch_size: 10_000 }),
    owner: 'pglite',
  });
  const submitted = await pipeline.submitBatch(
    Array.from({ length: 10_000 }, (_, i) => ({
      channel: 'push' as const,
      recipient: `token-${i}`,
      payload: { i, title: 'Bench 📦', body: 'مرحبا 你好' },
      scope: 'batch',
    })),
  );
  expect(submitted.every((r) => r.created)).toBe(true);
  pipeline.start();
  try {
    await waitFor(() => driver.sent.size >= 10_000, '10,000 sends', 120_000);
    await pipeline.worker.idle();
  } finally {
    await pipeline.stop(new Date(Date.now() + 5000));
  }
  expect([...driver.sent.values()].filter((n) => n !== 1)).toEqual([]);
  expect(driver.sent.size).toBe(10_000);
  expect(Math.max(...driver.batchSizes)).toBe(100);
  const rows = await knex('deliveries').groupBy('status').select('status').count('* as n');
  expect(rows.map((r) => [r.status, Number(r.n)])).toEqual([['sent', 10_000]]);
});
