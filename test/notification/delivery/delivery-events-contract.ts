/**
 * The event log part of the delivery store contract (WatchDeliveries reads it): every status change
 * of a record has exactly one event, written with the change, in order, scoped to the record's
 * caller, without recipient or content; events go with their records and raise the scope's horizon.
 * Registered by describeDeliveryContract, so memory, PostgreSQL and PGlite all run it.
 */
import { randomUUID } from 'node:crypto';
import type { DeliveryStore } from '../../../services/notification/delivery/store';
import type { DeliveryEvent, DeliveryEventFilter } from '../../../services/notification/delivery/events';
import { DeliveryRetention } from '../../../services/notification/delivery/retention';
import { ScriptedDriver, buildPipeline, newBackend, pollAndSettle, testConfig } from './support';

const DAY = 24 * 60 * 60 * 1000;

/** Registers the event log cases against the store `getStore()` returns (opened by the caller). */
export function describeDeliveryEventContract(getStore: () => DeliveryStore): void {
  describe('event log', () => {
    function setup() {
      const store = getStore();
      const driver = new ScriptedDriver(newBackend(), 'sms');
      const scope = `scope-${randomUUID()}`;
      const built = buildPipeline(store, [driver]);
      const submit = (extra: { idempotencyKey?: string; scope?: string; recipient?: string } = {}) =>
        built.pipeline.submit({
          channel: 'sms',
          backend: driver.name,
          recipient: extra.recipient ?? '+15551234567',
          payload: { text: 'secret body text' },
          scope: extra.scope ?? scope,
          idempotencyKey: extra.idempotencyKey,
        });
      /** The scope's events after `after`, once the sequencer has numbered everything committed. */
      const events = async (
        filter?: DeliveryEventFilter,
        after = 0,
        of = scope,
      ): Promise<DeliveryEvent[]> => {
        await store.sequenceEvents();
        return store.eventsAfter({ scopes: [of], after, limit: 1000, filter });
      };
      return { store, driver, scope, submit, events, ...built };
    }

    it('when a delivery is retried, sent and then delivered, each change is one event, in order', async () => {
      const { store, driver, submit, events, pipeline, clock } = setup();
      driver.script({ class: 'retryable', reason: '451 try later' });
      const { delivery } = await submit();
      await pollAndSettle(pipeline);
      clock.advance(60_000);
      await pollAndSettle(pipeline);
      await store.applyReceipt(
        delivery.id,
        { eventId: 'e1', event: 'delivered', status: 'delivered', failure: null },
        clock.date(),
      );
      const log = await events();
      expect(log.map((e) => [e.deliveryId, e.status])).toEqual([
        [delivery.id, 'pending'],
        [delivery.id, 'retrying'],
        [delivery.id, 'sent'],
        [delivery.id, 'delivered'],
      ]);
      expect(log[1]).toMatchObject({ reason: '451 try later', channel: 'sms', backend: driver.name });
      expect(log[2]).toMatchObject({ providerReference: 'ref', reason: null });
      expect(log[3]).toMatchObject({ reason: 'delivered', failure: null });
      // Strictly increasing seqs; never the recipient or the content.
      for (let i = 1; i < log.length; i++) expect(log[i]!.seq).toBeGreaterThan(log[i - 1]!.seq);
      expect(JSON.stringify(log)).not.toMatch(/5551234567|secret body/);
      expect(await store.latestEventSeq()).toBeGreaterThanOrEqual(log[3]!.seq);
    });

    it('when a receipt repeats, is behind the record, or a send repeats its key, no event is added', async () => {
      const { store, submit, events, pipeline, clock } = setup();
      const key = `k-${randomUUID()}`;
      const { delivery } = await submit({ idempotencyKey: key });
      expect((await submit({ idempotencyKey: key })).created).toBe(false);
      await pollAndSettle(pipeline);
      const receipt = { eventId: 'b1', event: 'bounce', status: 'undelivered' as const, failure: null };
      await store.applyReceipt(delivery.id, { ...receipt, providerCode: '550' }, clock.date());
      await store.applyReceipt(delivery.id, receipt, clock.date());
      await store.applyReceipt(
        delivery.id,
        { eventId: 'late', event: 'sent', status: 'sent', failure: null },
        clock.date(),
      );
      const log = await events();
      expect(log.map((e) => e.status)).toEqual(['pending', 'sent', 'undelivered']);
      expect(log[2]!.reason).toBe('bounce (550)');
    });

    it('when a recipient is suppressed at submit, its one event is failed / recipient_suppressed', async () => {
      const { store, driver, scope, events } = setup();
      const [result] = await store.createBatch([
        {
          id: randomUUID(),
          channel: 'sms',
          backend: driver.name,
          recipient: '+15550000000',
          maskedRecipient: '+1555****000',
          scope,
          idempotencyKey: null,
          contentHash: '0'.repeat(64),
          payload: { text: 'x' },
          createdAt: new Date(),
          suppressed: true,
        },
      ]);
      const log = await events();
      expect(log).toEqual([
        expect.objectContaining({
          deliveryId: result!.record.id,
          status: 'failed',
          failure: 'recipient_suppressed',
        }),
      ]);
    });

    it("when another caller's deliveries change, they are not in this caller's events", async () => {
      const { submit, events, scope, pipeline } = setup();
      const other = `other-${randomUUID()}`;
      const mine = await submit();
      const theirs = await submit({ scope: other });
      await pollAndSettle(pipeline);
      const ids = new Set((await events()).map((e) => e.deliveryId));
      expect(ids).toEqual(new Set([mine.delivery.id]));
      const both = await events(undefined, 0, other);
      expect(new Set(both.map((e) => e.deliveryId))).toEqual(new Set([theirs.delivery.id]));
      expect(scope).not.toBe(other);
    });

    it('when filters are given, only events of those channels, backends and statuses are read', async () => {
      const { submit, events, pipeline, driver, clock } = setup();
      driver.script({ class: 'permanent', reason: 'rejected' });
      const failed = await submit();
      const sent = await submit();
      await pollAndSettle(pipeline);
      clock.advance(1);
      const onlyFinal = await events({ statuses: ['sent', 'failed'] });
      // Which of the two the driver failed depends on claim order; each appears once, final.
      expect(onlyFinal.map((e) => e.status).sort()).toEqual(['failed', 'sent']);
      expect(new Set(onlyFinal.map((e) => e.deliveryId))).toEqual(
        new Set([failed.delivery.id, sent.delivery.id]),
      );
      expect(await events({ channels: ['email'] })).toEqual([]);
      expect(await events({ backends: ['no-such-backend'] })).toEqual([]);
      expect(
        await events({ channels: ['sms'], backends: [driver.name], statuses: ['pending'] }),
      ).toHaveLength(2);
    });

    it('when a page limit and a cursor are given, reading page by page gives every event once', async () => {
      const { store, submit, events, scope } = setup();
      for (let i = 0; i < 7; i++) await submit();
      const all = await events();
      expect(all).toHaveLength(7);
      const seen: number[] = [];
      let after = 0;
      for (;;) {
        const page = await store.eventsAfter({ scopes: [scope], after, limit: 3 });
        if (page.length === 0) break;
        seen.push(...page.map((e) => e.seq));
        after = page[page.length - 1]!.seq;
      }
      expect(seen).toEqual(all.map((e) => e.seq));
    });

    it('when retention deletes records, their events go with them and the horizon moves past them', async () => {
      const { store, submit, events, pipeline, clock, scope } = setup();
      const old = await submit();
      await pollAndSettle(pipeline);
      const before = await events();
      expect(await store.eventHorizon(scope)).toBe(0);
      clock.advance(31 * DAY);
      const fresh = await submit();
      const retention = new DeliveryRetention({
        store,
        config: { ...testConfig(), purge_batch_size: 1000 },
        clock: clock,
      });
      await retention.runOnce();
      const after = await events();
      expect(after.map((e) => e.deliveryId)).toEqual([fresh.delivery.id]);
      expect(after.some((e) => e.deliveryId === old.delivery.id)).toBe(false);
      const horizon = await store.eventHorizon(scope);
      expect(horizon).toBe(Math.max(...before.map((e) => e.seq)));
      expect(after[0]!.seq).toBeGreaterThan(horizon);
    });
  });
}
