/**
 * The worker's own lease running out under a running attempt (an outcome that waits long to be
 * recorded, e.g. behind other statements on PGlite's one connection): the record is due again and
 * the same worker claims it, but must not start a second attempt, which would send the message twice.
 */
import { InMemoryDeliveryStore } from '../../../services/notification/delivery/memory-store';
import type { SendOutcome } from '../../../services/notification/delivery/driver';
import { Gate, ScriptedDriver, buildPipeline } from './support';

test('when its lease expires while its own attempt still runs, a worker reclaims the delivery but sends it once', async () => {
  const driver = new ScriptedDriver('smtp');
  const gate = new Gate<SendOutcome>();
  driver.script({ gate });
  const { pipeline, clock, config } = buildPipeline(new InMemoryDeliveryStore(), [driver]);
  const { delivery } = await pipeline.submit({
    channel: 'email',
    recipient: 'a@example.com',
    payload: { x: 1 },
    scope: 's',
  });

  expect(await pipeline.worker.pollOnce()).toBe(1);
  clock.advance(config.lease_seconds * 1000 + 1);
  // The delivery is due and unleased as far as the store knows: the claim takes it again.
  expect(await pipeline.worker.pollOnce()).toBe(0);
  expect(driver.calls).toHaveLength(1);

  gate.resolve({ class: 'sent', providerReference: 'ref-1' });
  await pipeline.worker.idle();
  expect(driver.sendsById().get(delivery.id)).toBe(1);
  expect((await pipeline.get(delivery.id))?.status).toBe('sent');
  // Sent is final: nothing is claimed or sent again.
  clock.advance(config.lease_seconds * 1000 + 1);
  expect(await pipeline.worker.pollOnce()).toBe(0);
  expect(driver.calls).toHaveLength(1);
});

test('when shutdown begins while a poll renews the lease of its own running attempt, the lease and the started attempt are kept', async () => {
  const store = new InMemoryDeliveryStore();
  const driver = new ScriptedDriver('smtp');
  const gate = new Gate<SendOutcome>();
  driver.script({ gate });
  const { pipeline, clock, config } = buildPipeline(store, [driver], { owner: 'process-1' });
  const { delivery } = await pipeline.submit({
    channel: 'email',
    recipient: 'a@example.com',
    payload: { x: 1 },
    scope: 's',
  });
  expect(await pipeline.worker.pollOnce()).toBe(1);
  clock.advance(config.lease_seconds * 1000 + 1);
  // Shutdown begins while the claim that renews the running attempt's lease is under way.
  const claim = store.claim.bind(store);
  let stopped: Promise<unknown> | undefined;
  store.claim = async (request) => {
    const claimed = await claim(request);
    stopped = pipeline.worker.stop(new Date(Date.now() + 60_000));
    return claimed;
  };
  expect(await pipeline.worker.pollOnce()).toBe(0);
  store.claim = claim;
  // The attempt still runs: its lease is this worker's and its claim still counts, so another
  // process neither takes it (a second send) nor sees one started attempt fewer.
  const record = await store.get(delivery.id);
  expect(record).toMatchObject({ leaseOwner: 'process-1', attemptsStarted: 1 });
  const other = buildPipeline(store, [new ScriptedDriver('smtp')], { clock, owner: 'process-2' });
  expect(await other.pipeline.worker.pollOnce()).toBe(0);

  gate.resolve({ class: 'sent', providerReference: 'ref-1' });
  await stopped;
  expect(driver.sendsById().get(delivery.id)).toBe(1);
  expect((await store.get(delivery.id))?.status).toBe('sent');
  await other.pipeline.stop(new Date());
});
