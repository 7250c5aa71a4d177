/**
 * Attempts count when claimed (issue 23): a delivery whose attempts never end (each worker holding it
 * dies during the attempt) ends FAILED, `worker_died`, once its started attempts pass max_attempts,
 * instead of being claimed and sent again forever. Memory store; the process-level test with real
 * crashes on PostgreSQL is test/e2e/poison-payload.test.ts.
 */
import { InMemoryDeliveryStore } from '../../../services/notification/delivery/memory-store';
import { WORKER_DIED_ERROR } from '../../../services/notification/delivery/worker';
import { ManualClock, ScriptedDriver, buildPipeline } from './support';

test('when every worker that claims a delivery dies during its attempt, the delivery ends FAILED (worker_died) after max_attempts claims', async () => {
  const store = new InMemoryDeliveryStore();
  const clock = new ManualClock();
  const config = { max_attempts: 2, lease_seconds: 60 };
  // Each "process" is a pipeline with its own owner; its driver never answers (the process died).
  const replica = (i: number) => {
    const driver = new ScriptedDriver('smtp');
    driver.fallback = 'ignore-abort';
    return { driver, ...buildPipeline(store, [driver], { clock, config, owner: `process-${i}` }) };
  };
  const first = replica(1);
  const { delivery } = await first.pipeline.submit({
    channel: 'email',
    recipient: 'a@example.com',
    payload: { x: 1 },
    scope: 's',
  });

  expect(await first.pipeline.worker.pollOnce()).toBe(1);
  clock.advance(60_001);
  const second = replica(2);
  expect(await second.pipeline.worker.pollOnce()).toBe(1);
  expect(second.driver.calls.map((c) => c.attempt)).toEqual([2]);
  clock.advance(60_001);

  const third = replica(3);
  third.driver.fallback = { class: 'sent', providerReference: 'never' };
  expect(await third.pipeline.worker.pollOnce()).toBe(0);
  expect(third.driver.calls).toHaveLength(0);
  const record = await third.pipeline.get(delivery.id);
  expect(record).toMatchObject({ status: 'failed', failure: 'worker_died', lastError: WORKER_DIED_ERROR });
  expect(record.attempts).toEqual([]);
  // Final: nobody claims it again.
  clock.advance(60_001);
  const fourth = replica(4);
  expect(await fourth.pipeline.worker.pollOnce()).toBe(0);
  // The "dead" workers' hanging attempts end with their pipelines (no timers left behind).
  for (const r of [first, second, third, fourth]) await r.pipeline.stop(new Date());
});
