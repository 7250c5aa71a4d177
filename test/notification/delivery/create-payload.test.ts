/**
 * The create path's statement takes each payload as the JSON value it is (spliced into its row of
 * the recordset, database-store.ts `insertBatch`): payloads with quotes, backslashes, line
 * separators, emoji, CJK and right-to-left text come back as they went in, through `create` (group
 * committed, several in one statement) and `createBatch`, on PGlite and on PostgreSQL.
 */
import type { Knex } from 'knex';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import type { NewDelivery } from '../../../services/notification/delivery/store';
import { notificationMigrations } from '../../../services/notification/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { newId } from '../../../shared/runtime/ids';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { createTestDatabase } from '../../support/database';
import { requireVmModules } from './support';

const PAYLOADS: unknown[] = [
  { subject: 'say "hi" \\ back\\slash', text: 'line\nbreak\ttab \u2028 \u2029 end' },
  { subject: '🎉 東京 שלום عربي', to: [{ email: '😀-東京-שלום@example.com', name: 'Ünïcødé' }] },
  { nested: { list: [1, 2.5, -3, true, false, null, 'x'], empty: {}, none: [] } },
  '"a bare string with quotes"',
  ['an', 'array', { '"key"': 'value' }],
  42,
];

function delivery(payload: unknown, i: number): NewDelivery {
  return {
    id: newId(),
    channel: 'email',
    backend: 'b',
    recipient: `r${i}@example.com`,
    maskedRecipient: 'r***@example.com',
    scope: 'payload-test',
    idempotencyKey: `k-${newId()}`,
    contentHash: `h${i}`,
    payload,
    createdAt: new Date('2026-11-29T08:00:00.000Z'),
  };
}

function describeOn(name: string, open: () => Promise<{ knex: Knex; close(): Promise<void> }>): void {
  describe(`create payloads on ${name}`, () => {
    let knex: Knex;
    let close: () => Promise<void>;
    let store: DatabaseDeliveryStore;

    beforeAll(async () => {
      ({ knex, close } = await open());
      await runMigrations(knex, notificationMigrations);
      store = new DatabaseDeliveryStore(knex, { clock: 'caller' });
    });
    afterAll(async () => {
      await close?.();
    });

    it('concurrent creates (one statement) store and answer every payload as it was given', async () => {
      const made = PAYLOADS.map(delivery);
      const results = await Promise.all(made.map((d) => store.create(d)));
      expect(results.map((r) => r.created)).toEqual(PAYLOADS.map(() => true));
      expect(results.map((r) => r.record.payload)).toEqual(PAYLOADS);
      const read = await Promise.all(made.map((d) => store.get(d.id)));
      expect(read.map((r) => r?.payload)).toEqual(PAYLOADS);
    });

    it('createBatch stores every payload as it was given; the same keys again answer the stored ones', async () => {
      const made = PAYLOADS.map(delivery);
      const results = await store.createBatch(made);
      expect(results.map((r) => r.record.payload)).toEqual(PAYLOADS);
      const again = await store.createBatch(made.map((d) => ({ ...d, id: newId() })));
      expect(again.map((r) => [r.created, r.record.id])).toEqual(made.map((d) => [false, d.id]));
      expect(again.map((r) => r.record.payload)).toEqual(PAYLOADS);
    });
  });
}

describeOn('PGlite', async () => {
  requireVmModules();
  const knex = await openDatabase({ url: '', data_dir: ':memory:', pool_max: 1 }, silentLogger());
  return { knex, close: () => knex.destroy() };
});

describeOn('PostgreSQL', async () => {
  const db = await createTestDatabase('payload');
  const knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 4 }, silentLogger());
  return {
    knex,
    close: async () => {
      await knex.destroy();
      await db.drop();
    },
  };
});
