/**
 * The worker's slots (issue 30, "Batch paths on PostgreSQL"): a slot is a provider call, given back
 * when the call ends while its outcome is still being written, so the next claim overlaps that write;
 * outcomes being written are bounded at the same number per backend, and a record whose outcome is
 * still being written is never started again by a claim that renews its lease.
 */
import { InMemoryDeliveryStore } from '../../../services/notification/delivery/memory-store';
import type { AttemptResult } from '../../../services/notification/delivery/store';
import type { DeliveryRecord } from '../../../services/notification/delivery/types';
import { Gate, ScriptedDriver, buildPipeline, waitFor } from './support';

/** A memory store whose outcome writes wait for `gate` (a database that is slow to commit). */
class SlowWritesStore extends InMemoryDeliveryStore {
  gate = new Gate();
  /** Writes waiting for the gate. */
  waiting = 0;

  override async completeAttempt(
    id: string,
    owner: string,
    result: AttemptResult,
  ): Promise<DeliveryRecord | null> {
    this.waiting++;
    await this.gate.promise;
    this.waiting--;
    return super.completeAttempt(id, owner, result);
  }
}

async function submit(pipeline: ReturnType<typeof buildPipeline>['pipeline'], n: number) {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const { delivery } = await pipeline.submit({
      channel: 'email',
      recipient: `r${i}@example.com`,
      payload: { i },
      scope: 's',
    });
    ids.push(delivery.id);
  }
  return ids;
}

test('when the provider call has ended but its outcome is still being written, its slot is claimed again', async () => {
  const store = new SlowWritesStore();
  const driver = new ScriptedDriver('smtp');
  const { pipeline } = buildPipeline(store, [driver], { config: { concurrency: 2 } });
  const ids = await submit(pipeline, 7);

  expect(await pipeline.worker.pollOnce()).toBe(2);
  await waitFor(() => store.waiting === 2);
  // Both calls ended; their writes wait. The two slots are free again.
  expect(await pipeline.worker.pollOnce()).toBe(2);
  await waitFor(() => store.waiting === 4);
  expect(driver.calls).toHaveLength(4);
  expect(pipeline.worker.activeAttempts).toBe(4);

  // Two outcomes being written is the bound (the concurrency): the next two kept their slots.
  expect(await pipeline.worker.pollOnce()).toBe(0);
  expect(driver.calls).toHaveLength(4);

  store.gate.resolve();
  await pipeline.worker.idle();
  while ((await pipeline.worker.pollOnce()) > 0) await pipeline.worker.idle();
  for (const id of ids) expect(await pipeline.get(id)).toMatchObject({ status: 'sent' });
  expect([...driver.sendsById().values()]).toEqual(ids.map(() => 1));
});

test('at the bound of outcomes being written, a slot comes back once its own outcome is written', async () => {
  const store = new SlowWritesStore();
  const driver = new ScriptedDriver('smtp');
  const { pipeline } = buildPipeline(store, [driver], { config: { concurrency: 1 } });
  await submit(pipeline, 3);

  expect(await pipeline.worker.pollOnce()).toBe(1);
  await waitFor(() => store.waiting === 1);
  expect(await pipeline.worker.pollOnce()).toBe(1);
  await waitFor(() => store.waiting === 2);
  // One slot, one outcome being written: nothing more starts until a write lands.
  expect(await pipeline.worker.pollOnce()).toBe(0);

  store.gate.resolve();
  await pipeline.worker.idle();
  expect(await pipeline.worker.pollOnce()).toBe(1);
  await pipeline.worker.idle();
  expect(driver.calls).toHaveLength(3);
  expect(driver.maxActive).toBe(1);
});

test('a claim that renews the lease of a record whose outcome is still being written does not send it again', async () => {
  const store = new SlowWritesStore();
  const driver = new ScriptedDriver('smtp');
  const { pipeline, clock, config } = buildPipeline(store, [driver], { config: { concurrency: 1 } });
  const [id] = await submit(pipeline, 1);

  expect(await pipeline.worker.pollOnce()).toBe(1);
  await waitFor(() => store.waiting === 1);
  // Our own lease runs out while the write waits: the record is due again, and claimed by us.
  clock.advance(config.lease_seconds * 1000 + 1);
  expect(await pipeline.worker.pollOnce()).toBe(0);
  expect(driver.calls).toHaveLength(1);

  store.gate.resolve();
  await pipeline.worker.idle();
  expect(await pipeline.get(id!)).toMatchObject({ status: 'sent' });
  expect(driver.calls).toHaveLength(1);
});
