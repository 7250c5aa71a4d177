/**
 * Due work across replicas and restarts on PostgreSQL (two knex pools on one database = two
 * replicas): a cancel racing the runner is never both cancelled and sent; scheduled notifications
 * and held lines survive a restart (a runner that took them and died, and one never started);
 * 10,000 notifications due in the same second all go out exactly once across two runners.
 * The Notifier, store and runner are the real ones; the send targets record what they are given.
 */
import type { Knex } from 'knex';
import { randomUUID } from 'node:crypto';
import { notificationMigrations } from '../../../services/notification/migrations';
import { NotifyConfigSchema } from '../../../services/notification/notify/config';
import { DatabaseNotificationStore } from '../../../services/notification/notify/database-store';
import { Notifier } from '../../../services/notification/notify/notifier';
import { DueRunner } from '../../../services/notification/notify/schedule/due-runner';
import type { QuietHoursEnd } from '../../../services/notification/users/types';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { createTestDatabase } from '../../support/database';
import {
  FakeDirectory,
  FakePreferences,
  FakeRenderer,
  fakeUnsubscribeHeaders,
  RecordingTargets,
} from './fakes';
import { waitForAsync } from './support';

let db: { url: string; drop(): Promise<void> };
const pools: Knex[] = [];
const runners: DueRunner[] = [];

beforeAll(async () => {
  db = await createTestDatabase('notifysched');
  await runMigrations(await pool(), notificationMigrations);
});

afterAll(async () => {
  for (const r of runners) await r.stop().catch(() => undefined);
  for (const p of pools) await p.destroy().catch(() => undefined);
  await db?.drop();
});

async function pool(): Promise<Knex> {
  const knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 4 }, silentLogger());
  pools.push(knex);
  return knex;
}

const directory = new FakeDirectory();
const renderer = new FakeRenderer();
renderer.set('comments', 'inbox', 'en', { title: 'Hi {{ data.name }}', body: '{{ data.name }}' });
renderer.set('comments', 'sms', 'en', { text: 'Hi {{ data.name }}' });

/** One replica: its own pool, store, Notifier and (not started) runner; the targets shared to count. */
async function replica(
  targets: RecordingTargets,
  opts: { quietHoursEnd?: QuietHoursEnd; leaseMs?: number; batch?: number } = {},
) {
  const store = new DatabaseNotificationStore(await pool());
  const notifier = new Notifier({
    config: NotifyConfigSchema.parse({ categories: [{ name: 'comments', channels: ['inbox', 'sms'] }] }),
    store,
    directory,
    preferences: new FakePreferences(),
    renderer,
    unsubscribeHeaders: fakeUnsubscribeHeaders,
    targets,
    deliveries: { get: async (id: string) => ({ id, status: 'queued' }) as never },
    ...(opts.quietHoursEnd ? { quietHoursEnd: opts.quietHoursEnd } : {}),
  });
  const runner = new DueRunner({
    store,
    work: notifier,
    pollMs: 25,
    leaseMs: opts.leaseMs ?? 30_000,
    ...(opts.batch ? { batch: opts.batch } : {}),
  });
  runners.push(runner);
  return { store, notifier, runner };
}

function newUser(prefix: string, phones: string[] = []) {
  return directory.add({ userId: `${prefix}-${randomUUID()}`, phones });
}

async function statuses(knex: Knex, ids: readonly string[]): Promise<Map<string, string>> {
  const { rows } = (await knex.raw('SELECT id, status FROM notifications WHERE id = ANY(?::uuid[])', [
    [...ids],
  ])) as { rows: { id: string; status: string }[] };
  return new Map(rows.map((r) => [r.id, r.status]));
}

it('a cancel racing the runner on another replica: each notification is either cancelled and never sent, or sent and the cancel took nothing', async () => {
  const targets = new RecordingTargets();
  // Small batches, so the runner's claims and the cancels interleave.
  const a = await replica(targets, { batch: 4 });
  const b = await replica(targets);
  const N = 200;
  const users = Array.from({ length: N }, () => newUser('race'));
  const sendAt = new Date(Date.now() + 1500);
  const ids: string[] = [];
  for (const u of users) {
    const { notification } = await a.notifier.notify(
      {
        userId: u.userId,
        topic: '',
        category: 'comments',
        data: { name: 'x' },
        overrides: [],
        priority: 'normal',
        idempotencyKey: '',
        sendAt,
      },
      'caller',
    );
    ids.push(notification.id);
  }
  await new Promise((r) => setTimeout(r, Math.max(0, sendAt.getTime() - Date.now())));
  // Replica B cancels every one, from the newest, while replica A's runner takes them from the oldest.
  const cancelling = Promise.all(
    ids.map((_, i) => ids[N - 1 - i]!).map((id) => b.notifier.cancel({ id, idempotencyKey: '' }, 'caller')),
  );
  a.runner.start();
  const cancels = (await cancelling).reverse();
  await waitForAsync(
    async () =>
      [...(await statuses(pools[0]!, ids)).values()].every((s) => s === 'cancelled' || s === 'fanned_out'),
    'every notification to end cancelled or fanned out',
    60_000,
  );
  await a.runner.stop();
  const final = await statuses(pools[0]!, ids);
  let won = 0;
  for (const [i, id] of ids.entries()) {
    const sent = targets.of('inbox', users[i]!.userId).length;
    if (final.get(id) === 'cancelled') {
      won++;
      expect([id, sent]).toEqual([id, 0]);
      expect(cancels[i]!.cancelled).toBe(1);
    } else {
      expect([id, sent]).toEqual([id, 1]);
      expect(cancels[i]!.cancelled).toBe(0);
    }
  }
  // Both outcomes happen (which one each gets depends on the race; about half each in runs here),
  // none is both: `won` is only how many the cancels took.
  void won;
}, 120_000);

it('scheduled notifications and held lines survive a restart: work a dead runner had taken, and work no runner had started, go out once from a new replica', async () => {
  const targets = new RecordingTargets();
  const heldUntil = new Date(Date.now() + 1500);
  const quietUntilSoon: QuietHoursEnd = (quiet) =>
    quiet.windows.length > 0 && Date.now() < heldUntil.getTime() ? heldUntil : null;
  const first = await replica(targets, { quietHoursEnd: quietUntilSoon });
  const scheduledUser = newUser('restart-s', ['+15550100002']);
  const quietUser = directory.add({
    ...newUser('restart-q', ['+15550100003']),
    quietHours: { windows: [{ days: [], start: '00:00', end: '23:59' }], holdEmail: false },
  });
  const takenUser = newUser('restart-t', ['+15550100004']);
  const base = {
    topic: '',
    category: 'comments',
    data: { name: 'Zoë 😀' },
    overrides: [],
    priority: 'normal' as const,
    idempotencyKey: '',
  };
  const sendAt = new Date(Date.now() + 1000);
  const scheduled = (await first.notifier.notify({ ...base, userId: scheduledUser.userId, sendAt }, 'caller'))
    .notification;
  const taken = (await first.notifier.notify({ ...base, userId: takenUser.userId, sendAt }, 'caller'))
    .notification;
  const held = (await first.notifier.notify({ ...base, userId: quietUser.userId }, 'caller')).notification;
  expect(held.channels.find((l) => l.channel === 'sms')).toMatchObject({
    holdReason: 'quiet_hours',
    heldUntil,
  });
  expect(targets.of('sms')).toEqual([]);
  // The first replica's runner takes what is due and dies with it (a short lease, never finished).
  await new Promise((r) => setTimeout(r, 1100));
  const died = await first.store.claimDue('dead-runner', 500, 1000);
  expect(died.map((d) => d.notification.id)).toEqual(expect.arrayContaining([scheduled.id, taken.id]));

  const second = await replica(targets, { quietHoursEnd: quietUntilSoon });
  second.runner.start();
  await waitForAsync(async () => targets.of('sms').length >= 3, 'the three SMS from the new replica', 30_000);
  await new Promise((r) => setTimeout(r, 300));
  await second.runner.stop();
  expect(
    targets
      .of('sms')
      .map((s) => s.to)
      .sort(),
  ).toEqual(['+15550100002', '+15550100003', '+15550100004']);
  expect(targets.of('inbox', quietUser.userId)).toHaveLength(1);
  const after = await second.notifier.get(held.id, 'caller');
  expect(after.channels.find((l) => l.channel === 'sms')).toMatchObject({
    heldUntil: null,
    holdReason: null,
  });
  for (const id of [scheduled.id, taken.id])
    expect((await second.notifier.get(id, 'caller')).status).toBe('fanned_out');
}, 60_000);

it('10,000 notifications due in the same second all go out exactly once across two runners', async () => {
  const targets = new RecordingTargets();
  const a = await replica(targets);
  const b = await replica(targets);
  const N = 10_000;
  const users = Array.from(
    { length: N },
    (_, i) => directory.add({ userId: `bulk-${String(i).padStart(5, '0')}` }).userId,
  );
  // Recorded in bulk (the setup, not what is under test): scheduled, due in the same second.
  const knex = pools[0]!;
  const { rows } = (await knex.raw("SELECT now() + interval '2 seconds' AS at")) as { rows: { at: Date }[] };
  const at = new Date(rows[0]!.at);
  const ids: string[] = [];
  for (let i = 0; i < N; i += 1000) {
    const chunk = users.slice(i, i + 1000).map((userId) => {
      const id = randomUUID();
      ids.push(id);
      return { id, userId, at: new Date(at.getTime() + (ids.length % 900)).toISOString() };
    });
    await knex.raw(
      `INSERT INTO notifications (id, scope, user_id, category, priority, request_hash, status, send_at, due_at,
         request, created_at, updated_at)
       SELECT r.id, 'caller', r.user_id, 'comments', 'normal', 'h', 'scheduled', r.at, r.at,
         '{"data":{"name":"bulk"},"overrides":[]}'::jsonb, now(), now()
       FROM jsonb_to_recordset(?::jsonb) AS r(id uuid, user_id text, at timestamptz)`,
      [JSON.stringify(chunk.map((c) => ({ id: c.id, user_id: c.userId, at: c.at })))],
    );
  }
  a.runner.start();
  b.runner.start();
  await waitForAsync(
    async () => {
      const { rows: left } = (await knex.raw(
        `SELECT count(*)::int AS n FROM notifications WHERE id = ANY(?::uuid[]) AND status <> 'fanned_out'`,
        [ids],
      )) as { rows: { n: number }[] };
      return left[0]!.n === 0;
    },
    'all 10,000 to fan out',
    300_000,
  );
  await a.runner.stop();
  await b.runner.stop();
  const inbox = targets.of('inbox');
  expect(inbox).toHaveLength(N);
  expect(new Set(inbox.map((m) => m.userId)).size).toBe(N);
}, 360_000);
