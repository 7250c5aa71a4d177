/**
 * The partitioned tables of migration 20261129100000 on PGlite (delivery/README.md, "Partitions"):
 * idempotency and provider references across partitions, whole partitions dropped by retention (keys,
 * events and the horizon with them), a partition that still holds a queued or recent record kept,
 * inbox events dropped by partition with each user's horizon, DeleteUser reaching every partition.
 * Times are the caller's (fake) clock, weeks in March 2026, far from the real date.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import { ensurePartitions, STRAGGLER_DAYS } from '../../../services/notification/delivery/database-retention';
import { AlreadyExistsError } from '../../../shared/errors';
import { DatabaseInboxStore } from '../../../services/notification/inbox/database-store';
import { silentLogger } from '../../../shared/logging/logger';
import { newDelivery } from './delivery-contract';
import { requireVmModules } from './support';
import { migratedPglite } from '../../support/database';

const DAY = 24 * 60 * 60 * 1000;
/** Mondays: the first day of a week partition. */
const WEEK1 = new Date('2026-03-02T00:00:00Z');
const WEEK3 = new Date('2026-03-16T00:00:00Z');

let knex: Knex;
let store: DatabaseDeliveryStore;

beforeAll(async () => {
  requireVmModules();
  knex = await migratedPglite('notification');
  store = new DatabaseDeliveryStore(knex, { clock: 'caller' });
});

afterAll(async () => {
  await knex?.destroy();
});

async function partitionOf(id: string): Promise<string> {
  const result = (await knex.raw('SELECT tableoid::regclass::text AS part FROM deliveries WHERE id = ?', [
    id,
  ])) as { rows: { part: string }[] };
  return result.rows[0]!.part;
}

async function exists(table: string): Promise<boolean> {
  const result = (await knex.raw('SELECT to_regclass(?) IS NOT NULL AS e', [table])) as {
    rows: { e: boolean }[];
  };
  return result.rows[0]!.e;
}

/** Ends `id` SENT at `at` with a provider reference (what a completed attempt leaves). */
async function finish(id: string, at: Date, reference: string | null = null): Promise<void> {
  await knex.raw(
    `UPDATE deliveries SET status = 'sent', finished_at = ?, sent_at = ?, updated_at = ?,
       next_attempt_at = NULL, provider_reference = ? WHERE id = ?`,
    [at.toISOString(), at.toISOString(), at.toISOString(), reference, id],
  );
}

function keyed(scope: string, key: string, at: Date, text = 'hello 👋 你好 مرحبا') {
  return {
    ...newDelivery('sms-a', at),
    scope,
    idempotencyKey: key,
    contentHash: text === 'other' ? '1'.repeat(64) : '0'.repeat(64),
    payload: { text },
  };
}

describe('partitioned deliveries on PGlite', () => {
  beforeAll(async () => {
    await ensurePartitions(knex, WEEK1);
    await ensurePartitions(knex, WEEK3);
  });

  it('rows land in the week partition of their creation, and the DEFAULT partition takes a week with none', async () => {
    const a = await store.create(newDelivery('sms-a', new Date(WEEK1.getTime() + 3 * DAY)));
    const b = await store.create(newDelivery('sms-a', new Date('2031-07-09T12:00:00Z')));
    expect(await partitionOf(a.record.id)).toBe('deliveries_p20260302');
    expect(await partitionOf(b.record.id)).toBe('deliveries_default');
    expect((await store.get(b.record.id))?.id).toBe(b.record.id);
  });

  it('the same idempotency key in two partitions two weeks apart is deduplicated, and refused with other content', async () => {
    const scope = `s-${randomUUID()}`;
    const first = await store.create(keyed(scope, 'k1', new Date(WEEK1.getTime() + DAY)));
    expect(first.created).toBe(true);
    const again = await store.create(keyed(scope, 'k1', new Date(WEEK3.getTime() + DAY)));
    expect(again.created).toBe(false);
    expect(again.record.id).toBe(first.record.id);
    expect(await partitionOf(first.record.id)).toBe('deliveries_p20260302');
    // Other content under the key: create answers the first record (the pipeline compares the
    // hashes and refuses); a batch refuses it itself.
    const clash = await store.create(keyed(scope, 'k1', new Date(WEEK3.getTime() + DAY), 'other'));
    expect(clash.created).toBe(false);
    expect(clash.record.contentHash).not.toBe(keyed(scope, 'k1', WEEK3, 'other').contentHash);
    await expect(
      store.createBatch([keyed(scope, 'k1', new Date(WEEK3.getTime() + DAY), 'other')]),
    ).rejects.toBeInstanceOf(AlreadyExistsError);
    // In one batch too: the second row of the same key is the first's.
    const batch = await store.createBatch([
      keyed(scope, 'k2', new Date(WEEK3.getTime() + DAY)),
      keyed(scope, 'k2', new Date(WEEK3.getTime() + DAY)),
      keyed(scope, 'k1', new Date(WEEK3.getTime() + 2 * DAY)),
    ]);
    expect(batch.map((r) => r.created)).toEqual([true, false, false]);
    expect(batch[1]!.record.id).toBe(batch[0]!.record.id);
    expect(batch[2]!.record.id).toBe(first.record.id);
    // Another caller's key of the same text is its own.
    const other = await store.create(keyed(`${scope}-other`, 'k1', new Date(WEEK3.getTime() + DAY)));
    expect(other.created).toBe(true);
    const count = (await knex.raw('SELECT count(*)::int AS n FROM deliveries WHERE scope LIKE ?', [
      `${scope}%`,
    ])) as { rows: { n: number }[] };
    expect(count.rows[0]!.n).toBe(3);
  });

  it('a receipt for a record in an old partition still finds it by provider reference', async () => {
    const old = await store.create(newDelivery('sms-a', new Date(WEEK1.getTime() + 2 * DAY)));
    await store.create(newDelivery('sms-a', new Date(WEEK3.getTime() + 2 * DAY)));
    const reference = `SM${randomUUID()}`;
    await finish(old.record.id, new Date(WEEK1.getTime() + 2 * DAY + 60_000), reference);
    const found = await store.findByProviderReference('sms', reference);
    expect(found?.id).toBe(old.record.id);
    expect(await store.findByProviderReference('sms', `${reference}-nope`)).toBeNull();
  });
});

describe('retention by partition on PGlite', () => {
  // Weeks of their own (April/May 2026), so the describe above does not keep them.
  const W = new Date('2026-04-06T00:00:00Z');
  const W2 = new Date('2026-04-13T00:00:00Z');

  it('drops a week whose records are all final and past retention, with keys and events (horizon moved); keeps a week with a queued record', async () => {
    await ensurePartitions(knex, W);
    const scope = `r-${randomUUID()}`;
    const gone = await store.create(keyed(scope, 'old-key', new Date(W.getTime() + DAY)));
    const also = await store.create(keyed(scope, 'other-key', new Date(W.getTime() + 2 * DAY)));
    const queued = await store.create(keyed(scope, 'queued', new Date(W2.getTime() + DAY)));
    const doneW2 = await store.create(keyed(scope, 'done-w2', new Date(W2.getTime() + DAY)));
    await finish(gone.record.id, new Date(W.getTime() + DAY + 1000));
    await finish(also.record.id, new Date(W.getTime() + 2 * DAY + 1000));
    await finish(doneW2.record.id, new Date(W2.getTime() + DAY + 1000));
    await store.sequenceEvents();
    const seqs = await store.eventsAfter({ scopes: [scope], after: 0, limit: 100 });
    expect(seqs.length).toBe(4);

    // Retention bound just past the end of W2: W2 holds a queued record, so it stays.
    const now = new Date(W2.getTime() + 40 * DAY);
    const result = await store.purgeExpired({
      now,
      eraseBefore: now,
      deleteBefore: new Date(W2.getTime() + 7 * DAY + 1),
      batchSize: 1000,
    });
    expect(await exists('deliveries_p20260406')).toBe(false);
    expect(await exists('deliveries_p20260413')).toBe(true);
    expect(result.deleted).toBeGreaterThanOrEqual(2);
    expect(await store.get(gone.record.id)).toBeNull();
    expect(await store.get(also.record.id)).toBeNull();
    expect((await store.get(queued.record.id))?.status).toBe('pending');
    expect((await store.get(doneW2.record.id))?.status).toBe('sent');
    // The key went with its record: the same key makes a new delivery now.
    const reused = await store.create(keyed(scope, 'old-key', new Date(W2.getTime() + 2 * DAY)));
    expect(reused.created).toBe(true);
    // Events of W are in the W-week event partition only if they occurred then; W2's stay.
    await store.sequenceEvents();
    const left = await store.eventsAfter({ scopes: [scope], after: 0, limit: 100 });
    expect(left.map((e) => e.deliveryId).sort()).toEqual(
      [queued.record.id, doneW2.record.id, reused.record.id].sort(),
    );
  });

  it('a cursor below a dropped event partition gets a horizon above it (RESET), never a silent gap', async () => {
    const V = new Date('2026-05-04T00:00:00Z');
    await ensurePartitions(knex, V);
    const scope = `h-${randomUUID()}`;
    const a = await store.create(keyed(scope, 'a', new Date(V.getTime() + DAY)));
    await finish(a.record.id, new Date(V.getTime() + DAY + 1000));
    // Its event occurred at creation (the insert's event) in V's event partition.
    await store.sequenceEvents();
    const [event] = await store.eventsAfter({ scopes: [scope], after: 0, limit: 10 });
    expect(event).toBeDefined();
    const deleteBefore = new Date(V.getTime() + 7 * DAY + 1);
    // Every older week is gone by now (earlier tests' weeks are past this bound too, or kept).
    await store.purgeExpired({ now: deleteBefore, eraseBefore: new Date(0), deleteBefore, batchSize: 1000 });
    expect(await exists('deliveries_p20260504')).toBe(false);
    expect(await store.eventHorizon(scope)).toBeGreaterThanOrEqual(event!.seq);
  });

  it('a final record of a week kept by a long-lived one goes row by row once STRAGGLER_DAYS past retention', async () => {
    const X = new Date('2026-06-01T00:00:00Z');
    await ensurePartitions(knex, X);
    const stuck = await store.create(newDelivery('sms-a', new Date(X.getTime() + DAY)));
    const done = await store.create(newDelivery('sms-a', new Date(X.getTime() + DAY)));
    await finish(done.record.id, new Date(X.getTime() + DAY + 1000));
    const just = new Date(X.getTime() + 7 * DAY + 1);
    await store.purgeExpired({ now: just, eraseBefore: new Date(0), deleteBefore: just, batchSize: 1000 });
    expect(await store.get(done.record.id)).not.toBeNull();
    const later = new Date(X.getTime() + DAY + (STRAGGLER_DAYS + 1) * DAY);
    await store.purgeExpired({ now: later, eraseBefore: new Date(0), deleteBefore: later, batchSize: 1000 });
    expect(await store.get(done.record.id)).toBeNull();
    expect(await store.get(stuck.record.id)).not.toBeNull();
    expect(await exists('deliveries_p20260601')).toBe(true);
  });

  it('DeleteUser erases a user across partitions and the DEFAULT one', async () => {
    const Y = new Date('2026-07-06T00:00:00Z');
    await ensurePartitions(knex, Y);
    const user = `u-${randomUUID()}`;
    const a = await store.create({ ...newDelivery('sms-a', new Date(Y.getTime() + DAY)), userId: user });
    const b = await store.create({ ...newDelivery('sms-a', new Date(Y.getTime() + 8 * DAY)), userId: user });
    expect(await partitionOf(b.record.id)).not.toBe(await partitionOf(a.record.id));
    expect(await store.eraseUser(user, new Date(Y.getTime() + 9 * DAY))).toBe(2);
    for (const id of [a.record.id, b.record.id]) {
      const record = await store.get(id);
      expect(record?.recipient).toBeNull();
      expect(record?.status).toBe('failed');
    }
  });
});

describe('partitioned inbox events on PGlite', () => {
  it("drops the weeks before the cutoff and moves each user's horizon to the highest seq dropped", async () => {
    const Z = new Date('2026-08-03T00:00:00Z');
    await ensurePartitions(knex, Z);
    const inbox = new DatabaseInboxStore(knex, { logger: silentLogger() });
    const user = `iu-${randomUUID()}`;
    const rows = (await knex.raw(
      `INSERT INTO inbox_events (user_id, type, unread_count, created_at)
       VALUES (?, 'created', 1, ?), (?, 'created', 2, ?) RETURNING seq, tableoid::regclass::text AS part`,
      [user, new Date(Z.getTime() + DAY).toISOString(), user, new Date(Z.getTime() + 8 * DAY).toISOString()],
    )) as { rows: { seq: string; part: string }[] };
    expect(rows.rows[0]!.part).toBe('inbox_events_p20260803');
    await inbox.purgeBatch(new Date(Z.getTime() + 7 * DAY), 1000);
    expect(await exists('inbox_events_p20260803')).toBe(false);
    expect(await exists('inbox_events_p20260810')).toBe(true);
    expect(await inbox.purgedThrough(user)).toBe(Number(rows.rows[0]!.seq));
  });
});
