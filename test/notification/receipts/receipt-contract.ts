/**
 * The receipt behaviour every DeliveryStore shares (forward-only status, duplicates by event id,
 * bounded history, lookup by provider message id), driven through the store the way ReceiptRecorder
 * uses it. Registered for the memory store and for PostgreSQL.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import {
  MAX_RECEIPTS_PER_DELIVERY,
  type IncomingReceipt,
} from '../../../services/notification/delivery/receipt';
import type { DeliveryStore } from '../../../services/notification/delivery/store';
import type { DeliveryRecord } from '../../../services/notification/delivery/types';

/** What a store's test file provides. */
export interface ReceiptContractBackend {
  store: DeliveryStore;
  close(): Promise<void>;
}

const T0 = new Date('2026-11-23T10:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

/** Records a delivery and, unless `sent` is false, its accepted first attempt with `reference`. */
export async function sentDelivery(
  store: DeliveryStore,
  opts: {
    reference?: string;
    channel?: DeliveryRecord['channel'];
    sent?: boolean;
    createdAt?: Date;
    backend?: string;
  } = {},
): Promise<DeliveryRecord> {
  const channel = opts.channel ?? 'sms';
  const backend = opts.backend ?? `b-${randomUUID().slice(0, 8)}`;
  const { record } = await store.create({
    id: randomUUID(),
    channel,
    backend,
    recipient: '+15551234567',
    maskedRecipient: '+1555****567',
    scope: 's',
    idempotencyKey: null,
    contentHash: 'h',
    payload: { body: 'hi' },
    createdAt: opts.createdAt ?? T0,
  });
  if (opts.sent === false) return record;
  const [claimed] = await store.claim({
    channel,
    backend,
    owner: 'w',
    now: new Date(record.createdAt.getTime() + 1),
    leaseMs: 60_000,
    limit: 1,
  });
  const done = await store.completeAttempt(claimed!.id, 'w', {
    attempt: {
      number: 1,
      startedAt: at(1),
      durationMs: 5,
      outcome: 'sent',
      backend,
      providerReference: opts.reference ?? `SM${randomUUID().replace(/-/g, '')}`,
    },
    status: 'sent',
    nextAttemptAt: null,
    now: at(2),
  });
  return done!;
}

const receipt = (
  eventId: string,
  status: IncomingReceipt['status'],
  failure: IncomingReceipt['failure'] = null,
): IncomingReceipt => ({ eventId, event: status ?? 'deferred', status, failure });

/** Registers the suite for one store. */
export function describeReceiptContract(name: string, open: () => Promise<ReceiptContractBackend>): void {
  describe(`${name}: receipt contract`, () => {
    let backend: ReceiptContractBackend;
    let store: DeliveryStore;

    beforeAll(async () => {
      backend = await open();
      store = backend.store;
    });

    afterAll(async () => {
      await backend?.close();
    });

    it('when a delivered receipt arrives for a SENT record, it is DELIVERED with the time and the receipt in its history', async () => {
      const d = await sentDelivery(store);
      const applied = await store.applyReceipt(d.id, receipt('e1', 'delivered'), at(5000));
      expect(applied!.fold).toMatchObject({ effect: 'applied', previousStatus: 'sent' });
      const got = await store.get(d.id);
      expect(got).toMatchObject({ status: 'delivered', deliveredAt: at(5000), failure: null });
      expect(got!.sentAt).toEqual(at(2));
      expect(got!.receipts).toEqual([
        {
          eventId: 'e1',
          event: 'delivered',
          status: 'delivered',
          failure: null,
          receivedAt: at(5000),
          effect: 'applied',
        },
      ]);
    });

    it('when the same provider event arrives again, nothing changes and the repeat is marked duplicate', async () => {
      const d = await sentDelivery(store);
      await store.applyReceipt(d.id, receipt('e1', 'undelivered', 'recipient_bounced'), at(10));
      const again = await store.applyReceipt(d.id, receipt('e1', 'undelivered', 'recipient_bounced'), at(20));
      expect(again!.fold.effect).toBe('duplicate');
      const got = await store.get(d.id);
      expect(got).toMatchObject({ status: 'undelivered', failure: 'recipient_bounced', updatedAt: at(20) });
      expect(got!.receipts.map((r) => r.effect)).toEqual(['applied', 'duplicate']);
    });

    it('when a late sent arrives after delivered, it is kept as ignored and the record stays DELIVERED', async () => {
      const d = await sentDelivery(store);
      await store.applyReceipt(d.id, receipt('delivered', 'delivered'), at(10));
      const late = await store.applyReceipt(d.id, receipt('sent', 'sent'), at(20));
      expect(late!.fold.effect).toBe('ignored');
      expect(await store.get(d.id)).toMatchObject({ status: 'delivered', deliveredAt: at(10) });
    });

    it('when undelivered follows delivered, the first final word stands', async () => {
      const d = await sentDelivery(store);
      await store.applyReceipt(d.id, receipt('a', 'delivered'), at(10));
      await store.applyReceipt(d.id, receipt('b', 'undelivered', 'provider_undelivered'), at(20));
      expect(await store.get(d.id)).toMatchObject({ status: 'delivered', failure: null });
    });

    it('when a spam complaint follows delivery, the record stays DELIVERED and carries the complaint', async () => {
      const d = await sentDelivery(store, { channel: 'email' });
      await store.applyReceipt(d.id, receipt('a', 'delivered'), at(10));
      const complaint = await store.applyReceipt(d.id, receipt('b', 'delivered', 'spam_complaint'), at(20));
      expect(complaint!.fold.effect).toBe('applied');
      expect(await store.get(d.id)).toMatchObject({
        status: 'delivered',
        failure: 'spam_complaint',
        deliveredAt: at(10),
      });
    });

    it('when a final receipt arrives before the acceptance was recorded, the record is final and no worker claims it', async () => {
      const d = await sentDelivery(store, { sent: false, channel: 'email' });
      await store.applyReceipt(d.id, receipt('a', 'delivered'), at(10));
      expect(await store.get(d.id)).toMatchObject({ status: 'delivered', nextAttemptAt: null });
      const claimed = await store.claim({
        channel: 'email',
        backend: d.backend,
        owner: 'w2',
        now: at(60_000),
        leaseMs: 1000,
        limit: 10,
      });
      expect(claimed).toEqual([]);
    });

    it('when a sent receipt arrives for a queued record, it is ignored: the pipeline records SENT itself', async () => {
      const d = await sentDelivery(store, { sent: false });
      const r = await store.applyReceipt(d.id, receipt('s', 'sent'), at(10));
      expect(r!.fold.effect).toBe('ignored');
      const [claimed] = await store.claim({
        channel: 'sms',
        backend: d.backend,
        owner: 'w',
        now: at(60_000),
        leaseMs: 1000,
        limit: 1,
      });
      expect(claimed?.id).toBe(d.id);
      expect(claimed?.status).toBe('pending');
    });

    it('when a FAILED record gets a receipt, its status stays FAILED', async () => {
      const d = await sentDelivery(store, { sent: false });
      const [c] = await store.claim({
        channel: 'sms',
        backend: d.backend,
        owner: 'w',
        now: at(1),
        leaseMs: 1000,
        limit: 1,
      });
      await store.completeAttempt(c!.id, 'w', {
        attempt: { number: 1, startedAt: at(1), durationMs: 1, outcome: 'permanent', error: 'no' },
        status: 'failed',
        failure: 'provider_rejected',
        nextAttemptAt: null,
        now: at(2),
      });
      const r = await store.applyReceipt(d.id, receipt('a', 'delivered'), at(10));
      expect(r!.fold.effect).toBe('ignored');
      expect(await store.get(d.id)).toMatchObject({ status: 'failed', failure: 'provider_rejected' });
    });

    it(`when more than ${MAX_RECEIPTS_PER_DELIVERY} receipts arrive, the history stays at the bound and keeps the one that moved the record`, async () => {
      const d = await sentDelivery(store);
      await store.applyReceipt(d.id, receipt('final', 'delivered'), at(1));
      for (let i = 0; i < MAX_RECEIPTS_PER_DELIVERY + 8; i++) {
        await store.applyReceipt(d.id, receipt(`late-${i}`, 'sent'), at(10 + i));
        await store.applyReceipt(d.id, receipt(`late-${i}`, 'sent'), at(10 + i));
      }
      const got = await store.get(d.id);
      expect(got!.receipts).toHaveLength(MAX_RECEIPTS_PER_DELIVERY);
      expect(got!.receipts[0]).toMatchObject({ eventId: 'final', effect: 'applied' });
      expect(got!.receipts.at(-1)).toMatchObject({ eventId: `late-${MAX_RECEIPTS_PER_DELIVERY + 7}` });
    });

    it('when a receipt names no delivery, applyReceipt answers null', async () => {
      expect(await store.applyReceipt(randomUUID(), receipt('a', 'delivered'), at(1))).toBeNull();
    });

    it('finds a delivery by provider message id within its channel, the newest when reused', async () => {
      const reference = `SM${randomUUID().replace(/-/g, '')}`;
      await sentDelivery(store, { reference, createdAt: at(0) });
      const newer = await sentDelivery(store, { reference, createdAt: at(1000) });
      expect((await store.findByProviderReference('sms', reference))?.id).toBe(newer.id);
      expect(await store.findByProviderReference('email', reference)).toBeNull();
      expect(await store.findByProviderReference('sms', 'SMunknown')).toBeNull();
    });

    it('when two backends handed out the same provider message id, the lookup by backend finds each its own', async () => {
      const reference = `SM${randomUUID().replace(/-/g, '')}`;
      const first = await sentDelivery(store, { reference, backend: 'twilio', createdAt: at(0) });
      const second = await sentDelivery(store, { reference, backend: 'backup', createdAt: at(1000) });
      expect((await store.findByProviderReference('sms', reference, 'twilio'))?.id).toBe(first.id);
      expect((await store.findByProviderReference('sms', reference, 'backup'))?.id).toBe(second.id);
      expect(await store.findByProviderReference('sms', reference, 'other')).toBeNull();
    });

    it('lists by the receipt statuses and causes', async () => {
      const bounced = await sentDelivery(store, { channel: 'email' });
      await store.applyReceipt(bounced.id, receipt('b', 'undelivered', 'recipient_bounced'), at(10));
      const page = await store.list({
        filter: { status: 'undelivered', failure: 'recipient_bounced' },
        limit: 100,
      });
      expect(page.records.map((r) => r.id)).toContain(bounced.id);
      expect(page.records.every((r) => r.status === 'undelivered' && r.failure === 'recipient_bounced')).toBe(
        true,
      );
    });

    it('property: any order and any repeats of receipts leave the state the first final receipt decides', async () => {
      const kinds = fc.constantFrom<IncomingReceipt['status']>('sent', 'delivered', 'undelivered', null);
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.tuple(fc.integer({ min: 0, max: 5 }), kinds), { minLength: 1, maxLength: 12 }),
          async (events) => {
            const d = await sentDelivery(store);
            // One status per event id, as a provider sends: a repeat carries the same event.
            const statusOf = new Map<number, IncomingReceipt['status']>();
            const sequence = events.map(([id, status]) => {
              if (!statusOf.has(id)) statusOf.set(id, status);
              return { id, status: statusOf.get(id)! };
            });
            for (const [i, e] of sequence.entries()) {
              const failure = e.status === 'undelivered' ? 'provider_undelivered' : null;
              await store.applyReceipt(d.id, receipt(`ev-${e.id}`, e.status, failure), at(10 + i));
            }
            const firstFinal = sequence.find((e) => e.status === 'delivered' || e.status === 'undelivered');
            const got = (await store.get(d.id))!;
            expect(got.status).toBe(firstFinal?.status ?? 'sent');
            expect(got.failure).toBe(firstFinal?.status === 'undelivered' ? 'provider_undelivered' : null);
            expect(got.receipts).toHaveLength(sequence.length);
            const seen = new Set<number>();
            const expectedDuplicates = sequence.filter((e) =>
              seen.has(e.id) ? true : (seen.add(e.id), false),
            );
            expect(got.receipts.filter((r) => r.effect === 'duplicate')).toHaveLength(
              expectedDuplicates.length,
            );
            expect(got.receipts.filter((r) => r.effect === 'applied').length).toBeLessThanOrEqual(1);
          },
        ),
        { numRuns: store.backend === 'memory' ? 200 : 25 },
      );
    });
  });
}
