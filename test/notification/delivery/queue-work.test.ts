/**
 * What a poll, a claim and a scrape cost with a large backlog (issue 23), counted as work, not time:
 * the memory store's claims and polls look at index entries of the backend claimed for, never at the
 * rest of the queue; the queue gauges count the queue at most once per
 * `queue_stats_max_age_seconds`, however many scrapes come.
 */
import { Registry } from 'prom-client';
import { InMemoryDeliveryStore } from '../../../services/notification/delivery/memory-store';
import type { NewDelivery } from '../../../services/notification/delivery/store';
import { DeliveryPipeline } from '../../../services/notification/delivery/pipeline';
import { ManualClock, ScriptedDriver, lookupOf, testConfig } from './support';

const T0 = new Date('2026-11-01T12:00:00.000Z');

function backlog(store: InMemoryDeliveryStore, backend: string, n: number): void {
  const deliveries: NewDelivery[] = Array.from({ length: n }, (_, i) => ({
    id: `${backend}-${i}`,
    channel: 'email',
    backend,
    recipient: `u${i}@example.com`,
    maskedRecipient: 'u***@example.com',
    scope: 's',
    idempotencyKey: null,
    contentHash: 'h',
    payload: { i },
    createdAt: new Date(T0.getTime() + i),
  }));
  void store.createBatch(deliveries);
}

/** Index entries one poll and one claim of 8 records of `backend` look at. */
async function workOfOneClaim(store: InMemoryDeliveryStore, backend: string): Promise<number> {
  const before = store.examined;
  const due = await store.dueBackends(new Date(T0.getTime() + 3_600_000));
  expect(due).toContainEqual({ channel: 'email', backend });
  const claimed = await store.claim({
    channel: 'email',
    backend,
    owner: 'w',
    now: new Date(T0.getTime() + 3_600_000),
    leaseMs: 60_000,
    limit: 8,
  });
  expect(claimed).toHaveLength(8);
  return store.examined - before;
}

test('with 100,000 queued on one backend, a poll and a claim of 8 on another look at as many index entries as with 10 queued', async () => {
  const small = new InMemoryDeliveryStore();
  backlog(small, 'busy', 10);
  backlog(small, 'quiet', 10);
  const large = new InMemoryDeliveryStore();
  backlog(large, 'busy', 100_000);
  backlog(large, 'quiet', 10);

  expect(await workOfOneClaim(large, 'quiet')).toBe(await workOfOneClaim(small, 'quiet'));
  // And claiming from the large backlog itself costs what claiming from the small one does.
  expect(await workOfOneClaim(large, 'busy')).toBe(await workOfOneClaim(small, 'busy'));
});

test('when /metrics is scraped many times within queue_stats_max_age_seconds, the queue is counted once', async () => {
  const store = new InMemoryDeliveryStore();
  let counted = 0;
  const queueStats = store.queueStats.bind(store);
  store.queueStats = (now) => {
    counted++;
    return queueStats(now);
  };
  const clock = new ManualClock();
  const registry = new Registry();
  const driver = new ScriptedDriver('smtp');
  const withMetrics = new DeliveryPipeline({
    store,
    lookup: lookupOf(driver),
    config: testConfig({ queue_stats_max_age_seconds: 5 }),
    clock: clock,
    registry,
  });
  await withMetrics.submit({ channel: 'email', recipient: 'a@example.com', payload: { x: 1 }, scope: 's' });

  for (let i = 0; i < 10; i++) {
    expect(await registry.metrics()).toContain('notification_delivery_queue_depth{status="pending"} 1');
    clock.advance(400);
  }
  expect(counted).toBe(1);
  clock.advance(1000);
  await withMetrics.submit({ channel: 'email', recipient: 'b@example.com', payload: { x: 2 }, scope: 's' });
  expect(await registry.metrics()).toContain('notification_delivery_queue_depth{status="pending"} 2');
  expect(counted).toBe(2);
});
