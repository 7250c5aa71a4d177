/**
 * The recorder's receipt hook (DeliveryObserver.onReceipt): told once per delivery, by the recorder
 * whose store update moved it from SENT (or before) to DELIVERED / UNDELIVERED; a duplicate, a
 * replayed callback, a receipt for a record already final tells nobody. On the memory store and on
 * PostgreSQL (two recorders on one database stand for two replicas), and through to the monitor
 * reporter's receipts SLO.
 */
import type { Knex } from 'knex';
import { Registry } from 'prom-client';
import { InMemoryDeliveryStore } from '../../../services/notification/delivery/memory-store';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import {
  allObservers,
  type DeliveryObserver,
  type DeliveryReceiptOutcome,
} from '../../../services/notification/delivery/observer';
import type { IncomingReceipt } from '../../../services/notification/delivery/receipt';
import {
  ReceiptRecorder,
  type ReceiptSource,
  type VerifiedReceipt,
} from '../../../services/notification/delivery/receipt-recorder';
import type { DeliveryStore } from '../../../services/notification/delivery/store';
import type { SuppressionSink } from '../../../services/notification/delivery/suppression-sink';
import { notificationMigrations } from '../../../services/notification/migrations';
import { MonitorReporterConfigSchema } from '../../../services/notification/monitor/config';
import type { RatioSloDeclaration } from '../../../services/notification/monitor/default-slos';
import type { MonitorSink, SloEventEntry } from '../../../services/notification/monitor/monitor-client';
import { MonitorReporter } from '../../../services/notification/monitor/reporter';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { createTestDatabase } from '../../support/database';
import { ManualClock } from '../../support/manual-clock';
import { sentDelivery } from '../receipts/receipt-contract';

const NOW = new Date('2026-11-23T10:00:10.000Z');

const nullSink: SuppressionSink = { add: async () => true, remove: async () => true };

/** An observer that keeps what it hears. */
class Heard implements DeliveryObserver {
  receipts: DeliveryReceiptOutcome[] = [];
  onOutcome(): void {}
  onReceipt(r: DeliveryReceiptOutcome): void {
    this.receipts.push(r);
  }
}

function verified(
  providerReference: string,
  eventId: string,
  status: IncomingReceipt['status'],
  failure: IncomingReceipt['failure'] = null,
  providerCode?: string,
): VerifiedReceipt {
  const receipt: IncomingReceipt = { eventId, event: status ?? 'queued', status, failure };
  if (providerCode !== undefined) receipt.providerCode = providerCode;
  return { receipt, type: receipt.event, providerReference };
}

function describeReceiptObserver(
  name: string,
  open: () => Promise<{ store: DeliveryStore; close(): Promise<void> }>,
) {
  describe(`${name}: the receipt observer`, () => {
    let store: DeliveryStore;
    let close: () => Promise<void>;
    beforeAll(async () => {
      ({ store, close } = await open());
    });
    afterAll(async () => {
      await close?.();
    });

    function recorder(observer?: DeliveryObserver) {
      const clock = new ManualClock(NOW);
      const rec = new ReceiptRecorder({
        store,
        registry: new Registry(),
        sink: nullSink,
        clock,
        ...(observer ? { observer } : {}),
      });
      return { rec, clock };
    }

    async function sent(ref: string) {
      const d = await sentDelivery(store, { reference: ref, channel: 'sms' });
      const source: ReceiptSource = { channel: 'sms', backend: d.backend, provider: 'sms_gateway' };
      return { d, source };
    }

    it('a DELIVERED receipt for a SENT delivery is told once, with its times; the same receipt again tells nobody', async () => {
      const heard = new Heard();
      const { rec, clock } = recorder(heard);
      const { d, source } = await sent('SMobs1');
      expect(await rec.record(source, verified('SMobs1', 'SMobs1:delivered', 'delivered'))).toBe('verified');
      expect(heard.receipts).toEqual([
        {
          deliveryId: d.id,
          channel: 'sms',
          backend: d.backend,
          status: 'delivered',
          failure: null,
          sentAt: d.sentAt,
          receivedAt: NOW,
        },
      ]);
      clock.advance(5000);
      // A duplicate (same event id), a later event ('read' also means delivered), an undelivered after
      // delivered: the record is final, nobody hears again.
      expect(await rec.record(source, verified('SMobs1', 'SMobs1:delivered', 'delivered'))).toBe('duplicate');
      expect(await rec.record(source, verified('SMobs1', 'SMobs1:read', 'delivered'))).toBe('verified');
      expect(
        await rec.record(
          source,
          verified('SMobs1', 'SMobs1:undelivered', 'undelivered', 'provider_undelivered'),
        ),
      ).toBe('verified');
      // A cause reported after delivery (a spam complaint) moves the record's cause, not its status.
      expect(await rec.record(source, verified('SMobs1', 'SMobs1:spam', 'delivered', 'spam_complaint'))).toBe(
        'verified',
      );
      expect((await store.get(d.id))!.failure).toBe('spam_complaint');
      expect(heard.receipts).toHaveLength(1);
    });

    it('an UNDELIVERED receipt is told with its cause and provider code; a status-less receipt tells nobody', async () => {
      const heard = new Heard();
      const { rec } = recorder(heard);
      const { d, source } = await sent('SMobs2');
      await rec.record(source, verified('SMobs2', 'SMobs2:sending', null));
      await rec.record(source, verified('SMobs2', 'SMobs2:sent', 'sent'));
      expect(heard.receipts).toEqual([]);
      await rec.record(
        source,
        verified('SMobs2', 'SMobs2:failed', 'undelivered', 'recipient_invalid', '30005'),
      );
      expect(heard.receipts).toEqual([
        expect.objectContaining({
          deliveryId: d.id,
          status: 'undelivered',
          failure: 'recipient_invalid',
          providerCode: '30005',
        }),
      ]);
    });

    it('a replayed callback (recordOnce, same id) tells nobody', async () => {
      const heard = new Heard();
      const { rec } = recorder(heard);
      const { source } = await sent('SMobs3');
      const v = verified('SMobs3', 'SMobs3:delivered', 'delivered');
      expect(await rec.recordOnce(source, 'SMobs3:delivered', v)).toBe('verified');
      expect(await rec.recordOnce(source, 'SMobs3:delivered', v)).toBe('replay');
      expect(heard.receipts).toHaveLength(1);
    });

    it('a final receipt that overtakes the recording of the acceptance is told with no sentAt', async () => {
      const heard = new Heard();
      const { rec } = recorder(heard);
      const d = await sentDelivery(store, { channel: 'sms', sent: false });
      const source: ReceiptSource = { channel: 'sms', backend: d.backend, provider: 'sms_gateway' };
      await rec.record(source, {
        ...verified('', 'e-early', 'delivered'),
        deliveryId: d.id,
        providerReference: undefined,
      });
      expect(heard.receipts).toEqual([expect.objectContaining({ deliveryId: d.id, sentAt: null })]);
    });

    it('an observer that throws is logged and ignored: the receipt is applied and answered', async () => {
      const after = new Heard();
      const throwing: DeliveryObserver = {
        onOutcome() {},
        onReceipt() {
          throw new Error('observer down');
        },
      };
      const { rec } = recorder(allObservers(throwing, after));
      const { d, source } = await sent('SMobs4');
      expect(await rec.record(source, verified('SMobs4', 'SMobs4:delivered', 'delivered'))).toBe('verified');
      expect((await store.get(d.id))!.status).toBe('delivered');
      // allObservers tells the next one despite the first throwing.
      expect(after.receipts).toHaveLength(1);
    });

    it('two recorders on one store racing receipts for one delivery: exactly one tells', async () => {
      const heard = new Heard();
      const a = recorder(heard).rec;
      const b = recorder(heard).rec;
      const { d, source } = await sent('SMobs5');
      await Promise.all([
        a.record(source, verified('SMobs5', 'SMobs5:delivered', 'delivered')),
        b.record(source, verified('SMobs5', 'SMobs5:read', 'delivered')),
        a.record(source, verified('SMobs5', 'SMobs5:undelivered', 'undelivered', 'provider_undelivered')),
        b.record(source, verified('SMobs5', 'SMobs5:delivered', 'delivered')),
      ]);
      expect(heard.receipts).toHaveLength(1);
      expect(heard.receipts[0]!.status).toBe((await store.get(d.id))!.status);
    });

    it('through to the monitor reporter: one good event of the channel receipts SLO, at the receipt second', async () => {
      const events = new Map<string, SloEventEntry[]>();
      const sink: MonitorSink = {
        recordSloSamples: async () => 1,
        registerSlo: async () => 'registered',
        captureException: async () => {},
        registerRatioSlo: async (_: RatioSloDeclaration) => 'registered',
        recordSloEvents: async (slo, e) => {
          events.set(slo, [...(events.get(slo) ?? []), ...e]);
          return e.length;
        },
        close: () => {},
      };
      const reporter = new MonitorReporter({
        config: MonitorReporterConfigSchema.parse({ grpc_address: '127.0.0.1:1' }),
        sink,
        receiptChannels: ['sms'],
      });
      try {
        const { rec } = recorder(reporter);
        const { source } = await sent('SMobs6');
        await rec.record(source, verified('SMobs6', 'SMobs6:delivered', 'delivered'));
        await rec.record(source, verified('SMobs6', 'SMobs6:delivered', 'delivered'));
        await reporter.flush();
        expect(events.get('notification-sms-receipts')).toEqual([{ atMs: NOW.getTime(), good: 1, bad: 0 }]);
      } finally {
        await reporter.stop();
      }
    });
  });
}

describeReceiptObserver('InMemoryDeliveryStore', async () => ({
  store: new InMemoryDeliveryStore(),
  close: async () => {},
}));

describeReceiptObserver('DatabaseDeliveryStore on PostgreSQL', async () => {
  const db = await createTestDatabase('receipt_obs');
  const knex: Knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 4 }, silentLogger());
  await runMigrations(knex, notificationMigrations);
  return {
    store: new DatabaseDeliveryStore(knex, { clock: 'caller' }),
    close: async () => {
      await knex.destroy();
      await db.drop();
    },
  };
});
