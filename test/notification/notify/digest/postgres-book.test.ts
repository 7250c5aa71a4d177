/**
 * The DigestBook on real PostgreSQL: the contract, then the concurrency cases of issue 26 with two
 * knex pools standing for two replicas.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { notificationMigrations } from '../../../../services/notification/migrations';
import { DatabaseDigestBook } from '../../../../services/notification/notify/digest/database-book';
import type { DueDigest } from '../../../../services/notification/notify/timing';
import { runMigrations } from '../../../../shared/storage/migrations';
import { pooledTestDatabase, type PooledTestDatabase } from '../../../support/database';
import { describeDigestBookContract, digestCategory, digestEvent } from './book-contract';
import { databaseBackend } from './database-backend';

let db: PooledTestDatabase;
let ready: Promise<Knex> | undefined;
function first(): Promise<Knex> {
  ready ??= (async () => {
    db = await pooledTestDatabase('digestpg', 4);
    const knex = await db.pool();
    await runMigrations(knex, notificationMigrations);
    return knex;
  })();
  return ready;
}

afterAll(async () => {
  await db?.close();
});

describeDigestBookContract('DatabaseDigestBook on PostgreSQL', async () =>
  databaseBackend(await first(), (knex, categories) => new DatabaseDigestBook({ knex, categories })),
);

describe('DatabaseDigestBook on PostgreSQL: two replicas at once', () => {
  const categories = [
    digestCategory('comments', { window: '1h', key: 'thread_id', max_count: 10_000 }),
    digestCategory('burst', { window: 1, max_count: 4 }),
  ];
  let replicas: [DatabaseDigestBook, DatabaseDigestBook];
  let pools: Knex[];

  beforeAll(async () => {
    pools = [await first(), await db.pool()];
    replicas = [
      new DatabaseDigestBook({ knex: pools[0]!, categories }),
      new DatabaseDigestBook({ knex: pools[1]!, categories }),
    ];
  });

  const dbNow = async () =>
    new Date((await pools[0]!.raw('SELECT now() AS now')).rows[0].now as Date | string);

  it('1,000 events for one user and key in the same second from two replicas make exactly one digest of 1,000', async () => {
    const user = `user-${randomUUID()}`;
    const second = await dbNow();
    const events = Array.from({ length: 1000 }, (_, i) =>
      digestEvent(new Date(second.getTime() + (i % 1000)), {
        userId: user,
        data: { i, text: `評論 ${i} 😀` },
      }),
    );
    const results = await Promise.all(events.map((e, i) => replicas[i % 2]!.add(e)));
    const ids = new Set(results.map((r) => r.digestId));
    expect(ids.size).toBe(1);
    const [id] = [...ids];
    expect((await replicas[0].get(id!))?.count).toBe(1000);
    const { rows } = await pools[0]!.raw(
      'SELECT count(*)::int AS n, count(DISTINCT notification_id)::int AS d FROM notification_digest_events WHERE digest_id = ?',
      [id],
    );
    expect(rows[0]).toEqual({ n: 1000, d: 1000 });
    const digests = await pools[0]!.raw(
      'SELECT count(*)::int AS n FROM notification_digests WHERE user_id = ?',
      [user],
    );
    expect(digests.rows[0].n).toBe(1);
  });

  it('events for two keys arriving at once from two replicas never merge', async () => {
    const user = `user-${randomUUID()}`;
    const now = await dbNow();
    const events = Array.from({ length: 400 }, (_, i) =>
      digestEvent(now, { userId: user, key: `thread-${i % 2}`, data: { key: i % 2 } }),
    );
    const results = await Promise.all(events.map((e, i) => replicas[(i >> 1) % 2]!.add(e)));
    const byKey = new Map<string, Set<string>>();
    results.forEach((r, i) => {
      const k = events[i]!.key;
      if (!byKey.has(k)) byKey.set(k, new Set());
      byKey.get(k)!.add(r.digestId);
    });
    expect([...byKey.values()].map((s) => s.size)).toEqual([1, 1]);
    const [a] = [...byKey.get('thread-0')!];
    const [b] = [...byKey.get('thread-1')!];
    expect(a).not.toBe(b);
    expect((await replicas[0].get(a!))?.count).toBe(200);
    expect((await replicas[1].get(b!))?.count).toBe(200);
  });

  it('adds interleaved with claims on both replicas: every event is in exactly one taken digest', async () => {
    const user = `user-${randomUUID()}`;
    const now = await dbNow();
    const total = 600;
    // Times around now, some already past their 1 s window: digests fill (max 4) or end while events
    // of their window still arrive, and the claimers take them meanwhile.
    const events = Array.from({ length: total }, (_, i) =>
      digestEvent(new Date(now.getTime() - ((i * 37) % 1500)), {
        userId: user,
        category: 'burst',
        data: { i },
      }),
    );
    const taken: DueDigest[] = [];
    let adding = true;
    const claimer = async (r: DatabaseDigestBook, owner: string) => {
      while (adding) {
        const got = (await r.claimDue(owner, 60_000, 20)).filter((d) => d.userId === user);
        taken.push(...got);
        for (const d of got) await r.finish(d.id, owner, `m-${d.id}`, null);
      }
    };
    const claimers = [claimer(replicas[0], 'runner-0'), claimer(replicas[1], 'runner-1')];
    const added = await Promise.all(events.map((e, i) => replicas[i % 2]!.add(e)));
    adding = false;
    await Promise.all(claimers);
    // The rest: wait for every window to end, then take what is left.
    await new Promise((r) => setTimeout(r, 1200));
    for (;;) {
      const got = (await replicas[0].claimDue('runner-0', 60_000, 100)).filter((d) => d.userId === user);
      if (got.length === 0) break;
      taken.push(...got);
    }
    const seen = new Map<string, number>();
    for (const d of taken)
      for (const e of d.events) seen.set(e.notificationId, (seen.get(e.notificationId) ?? 0) + 1);
    expect(seen.size).toBe(total);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    // Each add's answer names the digest the event was taken in.
    const digestOf = new Map<string, string>();
    for (const d of taken) for (const e of d.events) digestOf.set(e.notificationId, d.id);
    added.forEach((r, i) => expect(digestOf.get(events[i]!.notificationId)).toBe(r.digestId));
    expect(new Set(taken.map((d) => d.id)).size).toBe(taken.length);
    expect(taken.every((d) => d.events.length >= 1 && d.events.length <= 4)).toBe(true);
  });

  it('an add waiting on the digest row while a claim takes it puts the event into the next digest', async () => {
    const user = `user-${randomUUID()}`;
    const now = await dbNow();
    const first = await replicas[0].add(digestEvent(now, { userId: user }));
    // A claim in progress on replica 0: the digest's row locked, then moved to sending as claimDue does.
    const claim = await pools[0]!.transaction();
    try {
      await claim.raw('SELECT id FROM notification_digests WHERE id = ? FOR UPDATE', [first.digestId]);
      const late = digestEvent(new Date(now.getTime() + 1), { userId: user });
      const adding = replicas[1].add(late);
      // Wait until the add is blocked on the row lock (it read the digest as open before).
      for (let waiting = 0; waiting === 0;) {
        await new Promise((r) => setTimeout(r, 10));
        const { rows } = await pools[0]!.raw(
          `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        );
        waiting = rows[0].n;
      }
      await claim.raw(
        `UPDATE notification_digests SET status = 'sending', head = false, accepting = false,
           lease_owner = 'runner-0', lease_expires_at = now() + interval '1 minute' WHERE id = ?`,
        [first.digestId],
      );
      await claim.commit();
      const placed = await adding;
      expect(placed.digestId).not.toBe(first.digestId);
      expect((await replicas[0].get(first.digestId))?.count).toBe(1);
      const { rows } = await pools[0]!.raw(
        'SELECT digest_id FROM notification_digest_events WHERE notification_id = ?',
        [late.notificationId],
      );
      expect(rows).toEqual([{ digest_id: placed.digestId }]);
    } finally {
      if (!claim.isCompleted()) await claim.rollback();
    }
  });

  it('across a restart (the pool closed, a new book on a new pool) the open digest takes the next events and is claimed once', async () => {
    const user = `user-${randomUUID()}`;
    const now = await dbNow();
    const before = await db.pool();
    const old = new DatabaseDigestBook({ knex: before, categories });
    const first = await old.add(digestEvent(now, { userId: user, category: 'burst' }));
    await before.destroy();
    const after = new DatabaseDigestBook({ knex: await db.pool(), categories });
    for (let i = 1; i < 4; i++) {
      expect(
        (await after.add(digestEvent(new Date(now.getTime() + i), { userId: user, category: 'burst' })))
          .digestId,
      ).toBe(first.digestId);
    }
    const taken = (await after.claimDue('runner-new', 60_000, 100)).filter((d) => d.userId === user);
    expect(taken.map((d) => [d.id, d.events.length])).toEqual([[first.digestId, 4]]);
  });

  it('a digest is taken by one replica at a time; its expired lease is taken again by the other', async () => {
    const user = `user-${randomUUID()}`;
    const now = await dbNow();
    for (let i = 0; i < 4; i++) await replicas[0].add(digestEvent(now, { userId: user, category: 'burst' }));
    const [a, b] = await Promise.all([
      replicas[0].claimDue('runner-0', 200, 100),
      replicas[1].claimDue('runner-1', 200, 100),
    ]);
    const mine = [...a, ...b].filter((d) => d.userId === user);
    expect(mine).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 400));
    const again = (await replicas[1].claimDue('runner-x', 60_000, 100)).filter((d) => d.userId === user);
    expect(again.map((d) => d.id)).toEqual([mine[0]!.id]);
  });
});
