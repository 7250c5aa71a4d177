/**
 * The worker's batch path: records claimed together for a driver with `sendBatch` go out in one call,
 * each outcome is recorded for its own record (sent, retried, failed), the call runs under the attempt
 * timeout, a shutdown releases the whole batch, and a driver without `sendBatch` is sent one by one.
 */
import { InMemoryDeliveryStore } from '../../../services/notification/delivery/memory-store';
import type { DriverSendContext, SendOutcome } from '../../../services/notification/delivery/driver';
import { Gate, ScriptedDriver, buildPipeline, pollAndSettle } from './support';

/** A push driver whose batch call answers from a script (one outcome list per call). */
class BatchDriver extends ScriptedDriver {
  readonly batches: { payloads: unknown[]; ctx: DriverSendContext }[] = [];
  answer: (payloads: readonly unknown[], ctx: DriverSendContext) => Promise<SendOutcome[]> = async (p) =>
    p.map((_, i) => ({ class: 'sent', providerReference: `ref-${i}` }));

  constructor(name: string) {
    super(name, 'push');
  }

  sendBatch(payloads: readonly unknown[], ctx: DriverSendContext): Promise<SendOutcome[]> {
    this.batches.push({ payloads: [...payloads], ctx });
    return this.answer(payloads, ctx);
  }
}

function submitAll(pipeline: ReturnType<typeof buildPipeline>['pipeline'], n: number) {
  return pipeline.submitBatch(
    Array.from({ length: n }, (_, i) => ({
      channel: 'push' as const,
      recipient: `token-${i}`,
      payload: { i },
      scope: 's',
    })),
  );
}

test('when several records are claimed for a batch driver, one sendBatch call sends them and each outcome is its own', async () => {
  const driver = new BatchDriver('apns');
  driver.answer = async (p) =>
    p.map((payload, i) =>
      i === 1
        ? { class: 'retryable', reason: 'busy' }
        : i === 2
          ? { class: 'recipient_failure', reason: 'Unregistered', failure: 'recipient_unregistered' }
          : { class: 'sent', providerReference: `ref-${(payload as { i: number }).i}` },
    );
  const { pipeline } = buildPipeline(new InMemoryDeliveryStore(), [driver], { config: { concurrency: 3 } });
  const results = await submitAll(pipeline, 5);
  const ids = results.map((r) => r.delivery.id);

  // Three free slots: the first three go out in one call, no single sends.
  expect(await pollAndSettle(pipeline)).toBe(3);
  expect(driver.batches).toHaveLength(1);
  expect(driver.batches[0]!.payloads).toEqual([{ i: 0 }, { i: 1 }, { i: 2 }]);
  expect(driver.batches[0]!.ctx).toMatchObject({ deliveryId: ids[0], attempt: 1 });
  expect(driver.calls).toHaveLength(0);
  expect(await pipeline.get(ids[0]!)).toMatchObject({ status: 'sent', providerReference: 'ref-0' });
  expect(await pipeline.get(ids[1]!)).toMatchObject({ status: 'retrying', lastError: 'busy' });
  expect(await pipeline.get(ids[2]!)).toMatchObject({ status: 'failed', failure: 'recipient_unregistered' });

  // The other two: a second batch; nothing is sent twice.
  driver.answer = async (p) => p.map(() => ({ class: 'sent' }));
  expect(await pollAndSettle(pipeline)).toBe(2);
  expect(driver.batches[1]!.payloads).toEqual([{ i: 3 }, { i: 4 }]);
  for (const id of ids.slice(3)) expect((await pipeline.get(id)).status).toBe('sent');
  expect(await pollAndSettle(pipeline)).toBe(0);
  expect(driver.batches).toHaveLength(2);
});

test('when a batch driver answers too few outcomes or throws, the unanswered records are retried, never sent', async () => {
  const driver = new BatchDriver('apns');
  driver.answer = async () => [{ class: 'sent' }];
  const { pipeline } = buildPipeline(new InMemoryDeliveryStore(), [driver]);
  const ids = (await submitAll(pipeline, 3)).map((r) => r.delivery.id);
  expect(await pollAndSettle(pipeline)).toBe(3);
  expect((await pipeline.get(ids[0]!)).status).toBe('sent');
  for (const id of ids.slice(1))
    expect(await pipeline.get(id)).toMatchObject({
      status: 'retrying',
      lastError: 'invalid outcome from the delivery driver',
    });

  const other = new BatchDriver('apns2');
  other.answer = async () => {
    throw new Error('secret=hunter2');
  };
  const second = buildPipeline(new InMemoryDeliveryStore(), [other]);
  const more = (await submitAll(second.pipeline, 2)).map((r) => r.delivery.id);
  expect(await pollAndSettle(second.pipeline)).toBe(2);
  for (const id of more) {
    const view = await second.pipeline.get(id);
    expect(view).toMatchObject({ status: 'retrying', lastError: 'internal error in the delivery driver' });
    expect(JSON.stringify(view)).not.toContain('hunter2');
  }
});

test('when a batch call outlives the attempt timeout, every record of it is retried with the timeout reason', async () => {
  const driver = new BatchDriver('apns');
  // Ignores its signal: only the worker's own timeout ends it.
  driver.answer = () => new Promise<SendOutcome[]>(() => undefined);
  const { pipeline } = buildPipeline(new InMemoryDeliveryStore(), [driver], {
    config: { attempt_timeout_ms: 20 },
  });
  const ids = (await submitAll(pipeline, 2)).map((r) => r.delivery.id);
  expect(await pollAndSettle(pipeline)).toBe(2);
  for (const id of ids)
    expect(await pipeline.get(id)).toMatchObject({
      status: 'retrying',
      lastError: 'attempt timed out after 20 ms',
    });
  expect(pipeline.worker.activeAttempts).toBe(0);
});

test('when stopping during a batch call, the whole batch is aborted and released with its status kept', async () => {
  const driver = new BatchDriver('apns');
  const gate = new Gate<SendOutcome[]>();
  driver.answer = (_p, ctx) =>
    new Promise<SendOutcome[]>((resolve) => {
      ctx.signal.addEventListener('abort', () => resolve(_p.map(() => ({ class: 'retryable' }))), {
        once: true,
      });
      void gate.promise.then(resolve);
    });
  const store = new InMemoryDeliveryStore();
  const { pipeline, clock } = buildPipeline(store, [driver]);
  const ids = (await submitAll(pipeline, 3)).map((r) => r.delivery.id);
  expect(await pipeline.worker.pollOnce()).toBe(3);
  pipeline.start();
  const result = await pipeline.stop(new Date(Date.now() + 10));
  expect(result).toEqual({ finished: 0, released: 3 });
  expect(driver.batches[0]!.ctx.signal.aborted).toBe(true);
  for (const id of ids) expect(await pipeline.get(id)).toMatchObject({ status: 'pending', attempts: [] });
  // Released: another worker claims them at once.
  const again = await store.claim({
    channel: 'push',
    backend: 'apns',
    owner: 'next',
    now: clock.date(),
    leaseMs: 60_000,
    limit: 10,
  });
  expect(again.map((r) => r.id).sort()).toEqual([...ids].sort());
});

test('when the driver has no sendBatch, records claimed together are sent one by one', async () => {
  const driver = new ScriptedDriver('gw', 'push');
  const { pipeline } = buildPipeline(new InMemoryDeliveryStore(), [driver]);
  const ids = (await submitAll(pipeline, 3)).map((r) => r.delivery.id);
  expect(await pollAndSettle(pipeline)).toBe(3);
  expect(driver.calls.map((c) => c.deliveryId).sort()).toEqual([...ids].sort());
});
