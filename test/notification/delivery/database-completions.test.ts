/**
 * One bad row never takes others with it (issue 23): the outcomes of up to 256 attempts go to
 * PostgreSQL in one statement. Before, one error outside the "unavailable" list rejected them all,
 * their leases stayed, and after lease_seconds every one of them was claimed and sent again. Now a
 * transient error retries the batch, any other splits it, and the one row that cannot be written is
 * stored sanitised; its neighbours are recorded as they were and never claimed again.
 */
import type { Knex } from 'knex';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import type { AttemptResult } from '../../../services/notification/delivery/store';
import { notificationMigrations } from '../../../services/notification/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { createTestDatabase } from '../../support/database';
import { newBackend } from './support';

let db: { url: string; drop(): Promise<void> };
let knex: Knex;
let store: DatabaseDeliveryStore;
const T0 = new Date('2026-11-01T12:00:00.000Z');

beforeAll(async () => {
  db = await createTestDatabase('deliverycomplete');
  knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 4 }, silentLogger());
  await runMigrations(knex, notificationMigrations);
  // Times by hand: a claim "later" shows what is due again.
  store = new DatabaseDeliveryStore(knex, { clock: 'caller' });
});

afterAll(async () => {
  await knex?.destroy();
  await db?.drop();
});

/** `n` deliveries of a new backend, claimed by `owner`. */
async function claimed(n: number, owner: string): Promise<{ backend: string; ids: string[] }> {
  const backend = newBackend('complete');
  await store.createBatch(
    Array.from({ length: n }, (_, i) => ({
      id: crypto.randomUUID(),
      channel: 'sms' as const,
      backend,
      recipient: `+1555000${String(i).padStart(4, '0')}`,
      maskedRecipient: '+1555****',
      scope: 's',
      idempotencyKey: null,
      contentHash: 'h',
      payload: { i },
      createdAt: T0,
    })),
  );
  const records = await store.claim({ channel: 'sms', backend, owner, now: T0, leaseMs: 60_000, limit: n });
  expect(records).toHaveLength(n);
  return { backend, ids: records.map((r) => r.id) };
}

const sent = (number = 1): AttemptResult => ({
  attempt: { number, startedAt: T0, durationMs: 5, outcome: 'sent', providerReference: `SM${number}` },
  status: 'sent',
  nextAttemptAt: null,
  now: T0,
});

describe('recording a batch of outcomes on PostgreSQL', () => {
  it('when one outcome in a batch is a row jsonb refuses (a lone surrogate), the others are recorded as they were and it is stored sanitised', async () => {
    const { backend, ids } = await claimed(6, 'w');
    const bad: AttemptResult = {
      attempt: {
        number: 1,
        startedAt: T0,
        durationMs: 5,
        outcome: 'retryable',
        // A reason cut inside an emoji: JSON.stringify writes "\ud83d", which jsonb refuses.
        error: `provider said: busy ${'\ud83d'}`,
      },
      status: 'retrying',
      nextAttemptAt: new Date(T0.getTime() + 1000),
      now: T0,
    };
    // One turn: one batch.
    const results = await Promise.all(
      ids.map((id, i) => store.completeAttempt(id, 'w', i === 2 ? bad : sent())),
    );

    expect(results.every((r) => r !== null)).toBe(true);
    for (const [i, id] of ids.entries()) {
      const record = await store.get(id);
      if (i === 2) {
        expect(record).toMatchObject({ status: 'retrying', lastError: 'provider said: busy \uFFFD' });
        expect(record!.attempts).toHaveLength(1);
      } else {
        expect(record).toMatchObject({ status: 'sent', providerReference: 'SM1', leaseOwner: null });
      }
    }
    // Long after the lease: only the retrying one is claimed again; nothing SENT is sent twice.
    const later = new Date(T0.getTime() + 3_600_000);
    const again = await store.claim({
      channel: 'sms',
      backend,
      owner: 'v',
      now: later,
      leaseMs: 60_000,
      limit: 10,
    });
    expect(again.map((r) => r.id)).toEqual([ids[2]]);
  });

  it('when the batch meets a transient error (a deadlock, 40P01), it is retried and every outcome is recorded', async () => {
    const { backend, ids } = await claimed(4, 'w');
    // The next UPDATE of this backend's rows fails once with a deadlock (a sequence is not rolled back).
    await knex.raw('CREATE SEQUENCE IF NOT EXISTS fail_once');
    await knex.raw(`
      CREATE OR REPLACE FUNCTION fail_once() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.backend = '${backend}' AND nextval('fail_once') = 1 THEN
          RAISE EXCEPTION 'deadlock detected (simulated)' USING ERRCODE = '40P01';
        END IF;
        RETURN NEW;
      END $$`);
    await knex.raw(
      'CREATE TRIGGER fail_once BEFORE UPDATE ON deliveries FOR EACH ROW EXECUTE FUNCTION fail_once()',
    );
    try {
      const results = await Promise.all(ids.map((id) => store.completeAttempt(id, 'w', sent())));
      expect(results.map((r) => r?.status)).toEqual(['sent', 'sent', 'sent', 'sent']);
      const [{ n }] = (await knex.raw<{ rows: [{ n: string }] }>('SELECT last_value AS n FROM fail_once'))
        .rows;
      expect(Number(n)).toBeGreaterThan(1);
    } finally {
      await knex.raw('DROP TRIGGER fail_once ON deliveries');
    }
    for (const id of ids) expect((await store.get(id))?.status).toBe('sent');
  });
});
