/** Pipeline behaviours that need no database: page-size cap, wake-on-submit, leaks of secrets. */
import { InMemoryDeliveryStore } from '../../../services/notification/delivery/memory-store';
import { MAX_PAGE_SIZE } from '../../../services/notification/delivery/pipeline';
import { DeliveryPipeline } from '../../../services/notification/delivery/pipeline';
import { createLogger } from '../../../shared/logging/logger';
import { ManualClock, ScriptedDriver, buildPipeline, lookupOf, testConfig, waitFor } from './support';

describe('DeliveryPipeline (memory store)', () => {
  it('when a page larger than 500 is asked for, 500 are returned with a token for the rest', async () => {
    const driver = new ScriptedDriver('smtp');
    const { pipeline } = buildPipeline(new InMemoryDeliveryStore(), [driver]);
    for (let i = 0; i < MAX_PAGE_SIZE + 1; i++) {
      await pipeline.submit({ channel: 'email', recipient: `u${i}@example.com`, payload: { i }, scope: 's' });
    }
    const first = await pipeline.list({}, '', 10_000);
    expect(first.deliveries).toHaveLength(500);
    const second = await pipeline.list({}, first.nextPageToken, 10_000);
    expect(second.deliveries).toHaveLength(1);
    expect(second.nextPageToken).toBe('');
    expect((await pipeline.list({}, '', 0)).deliveries).toHaveLength(50);
  });

  it('when a delivery is submitted to a started, idle worker, it is sent without waiting for the poll interval', async () => {
    const driver = new ScriptedDriver('smtp');
    const { pipeline } = buildPipeline(new InMemoryDeliveryStore(), [driver], {
      config: { poll_interval_ms: 3_600_000 },
    });
    pipeline.start();
    try {
      // Let the first (empty) poll finish: the next timed poll is an hour away.
      await new Promise((resolve) => setTimeout(resolve, 20));
      const { delivery } = await pipeline.submit({
        channel: 'email',
        recipient: 'a@example.com',
        payload: { x: 1 },
        scope: 's',
      });
      await waitFor(() => driver.calls.length === 1, 'the woken worker to send');
      expect(driver.calls[0]?.deliveryId).toBe(delivery.id);
    } finally {
      await pipeline.stop(new Date(Date.now() + 1000));
    }
  });

  it('when a worker is stopped twice or stopped before starting, it returns without claiming', async () => {
    const driver = new ScriptedDriver('smtp');
    const { pipeline } = buildPipeline(new InMemoryDeliveryStore(), [driver]);
    await pipeline.submit({ channel: 'email', recipient: 'a@example.com', payload: { x: 1 }, scope: 's' });
    expect(await pipeline.stop(new Date())).toEqual({ finished: 0, released: 0 });
    pipeline.start();
    expect(await pipeline.stop(new Date())).toEqual({ finished: 0, released: 0 });
    expect(driver.calls).toHaveLength(0);
  });

  it('when deliveries are retried and fail, log lines show the masked recipient and never the content', async () => {
    const lines: string[] = [];
    const logger = createLogger({
      name: 'test',
      level: 'debug',
      destination: { write: (l: string) => void lines.push(l) },
    });
    const driver = new ScriptedDriver('smtp');
    driver.script({ class: 'retryable', reason: '451 later' }, 'throw', {
      class: 'permanent',
      reason: '550 no',
    });
    const clock = new ManualClock();
    const pipeline = new DeliveryPipeline({
      store: new InMemoryDeliveryStore(),
      lookup: lookupOf(driver),
      config: testConfig(),
      clock: clock,
      logger,
    });
    await pipeline.submit({
      channel: 'email',
      recipient: 'secret.person@example.com',
      payload: { text: 'TOPSECRET body' },
      scope: 's',
    });
    for (let i = 0; i < 3; i++) {
      await pipeline.worker.pollOnce();
      await pipeline.worker.idle();
      clock.advance(60000);
    }
    const text = lines.join('\n');
    expect(text).toContain('delivery failed');
    expect(text).toContain('s***@example.com');
    expect(text).not.toContain('secret.person@example.com');
    expect(text).not.toContain('TOPSECRET');
  });

  it('when a driver answers something that is not an outcome, the attempt is retryable instead of crashing the worker', async () => {
    const driver = new ScriptedDriver('smtp');
    driver.script({ class: 'bogus' } as never, undefined as never);
    const { pipeline } = buildPipeline(new InMemoryDeliveryStore(), [driver]);
    const a = await pipeline.submit({
      channel: 'email',
      recipient: 'a@example.com',
      payload: { n: 1 },
      scope: 's',
    });
    const b = await pipeline.submit({
      channel: 'email',
      recipient: 'b@example.com',
      payload: { n: 2 },
      scope: 's',
    });
    await pipeline.worker.pollOnce();
    await pipeline.worker.idle();
    for (const { delivery } of [a, b]) {
      expect(await pipeline.get(delivery.id)).toMatchObject({
        status: 'retrying',
        lastError: 'invalid outcome from the delivery driver',
      });
    }
  });
});
