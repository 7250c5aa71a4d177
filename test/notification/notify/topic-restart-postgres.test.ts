/**
 * A topic of 5,000 across a restart, on PostgreSQL: the service is stopped mid fan-out and a new one
 * started on the same database finishes the job; every member is notified exactly once (one
 * notification, one inbox message each).
 */
import { Client } from 'pg';
import { NotificationStatus } from '../../../shared/gen/svc/notification/v1/notify_pb';
import { createTestDatabase } from '../../support/database';
import { FakeDirectory } from './fakes';
import { startNotifyHarness, waitForAsync, type NotifyHarness } from './support';

const MEMBERS = 5000;
let db: { url: string; drop(): Promise<void> };
const harnesses: NotifyHarness[] = [];

beforeAll(async () => {
  db = await createTestDatabase('notifytopic');
});

// Each test's processes stop with it: a process left running from the first test shares the database
// but not the second test's directory, and could claim the second test's topic job and find no members.
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.close().catch(() => undefined);
});

afterAll(async () => {
  await db?.drop();
});

async function start(
  directory: FakeDirectory,
  categories?: { name: string; channels: ('inbox' | 'email' | 'sms' | 'push')[] }[],
): Promise<NotifyHarness> {
  const h = await startNotifyHarness(
    {
      database: { url: db.url },
      inbox: { store_backend: 'database' },
      delivery: { store_backend: 'database' },
      notify: { topic_page_size: 100, ...(categories ? { categories } : {}) },
    },
    { peers: false, directory },
  );
  h.renderer.set('digest', 'inbox', 'en', { title: 'Weekly digest', body: '{{ data.week }}' });
  harnesses.push(h);
  return h;
}

it('stopped mid fan-out, a new process finishes the topic and every member is notified exactly once', async () => {
  const directory = new FakeDirectory();
  const members = Array.from({ length: MEMBERS }, (_, i) => `member-${String(i).padStart(5, '0')}`);
  for (const userId of members) directory.add({ userId });
  directory.subscribe('weekly', members);

  const first = await start(directory);
  const { notification } = await first.notify.notify({
    topic: 'weekly',
    category: 'digest',
    data: { week: '48 😀' },
  });
  const id = notification!.id;
  await waitForAsync(
    async () =>
      Number((await first.notify.getNotification({ id })).notification!.progress!.usersDone) >= 1000,
    'the first thousand members',
    60_000,
  );
  await first.close();
  harnesses.splice(harnesses.indexOf(first), 1);

  const sql = new Client({ connectionString: db.url });
  await sql.connect();
  try {
    const stopped = await sql.query<{ status: string; users_done: string }>(
      'SELECT status, users_done FROM notifications WHERE id = $1',
      [id],
    );
    // Stopped mid fan-out: the job is not done, its progress is kept.
    expect(stopped.rows[0]!.status).toBe('fanning_out');
    expect(Number(stopped.rows[0]!.users_done)).toBeLessThan(MEMBERS);

    const second = await start(directory);
    await waitForAsync(
      async () =>
        (await second.notify.getNotification({ id })).notification!.status === NotificationStatus.FANNED_OUT,
      'the rest of the topic',
      120_000,
    );
    const done = (await second.notify.getNotification({ id })).notification!;
    expect(done.progress).toMatchObject({ usersTotal: BigInt(MEMBERS), usersDone: BigInt(MEMBERS) });

    const children = await sql.query<{ users: string; rows: string; fanned: string }>(
      `SELECT count(DISTINCT user_id) AS users, count(*) AS rows,
              count(*) FILTER (WHERE status = 'fanned_out') AS fanned
       FROM notifications WHERE parent_id = $1`,
      [id],
    );
    expect(children.rows[0]).toEqual({
      users: String(MEMBERS),
      rows: String(MEMBERS),
      fanned: String(MEMBERS),
    });
    const inbox = await sql.query<{ users: string; messages: string }>(
      `SELECT count(DISTINCT user_id) AS users, count(*) AS messages FROM inbox_messages
       WHERE user_id LIKE 'member-%'`,
    );
    expect(inbox.rows[0]).toEqual({ users: String(MEMBERS), messages: String(MEMBERS) });
  } finally {
    await sql.end();
  }
}, 240_000);

it('restarted without the category, the topic job finishes and sends nothing more of it (no retry at every lease)', async () => {
  const directory = new FakeDirectory();
  const members = Array.from({ length: 600 }, (_, i) => `gone-${String(i).padStart(4, '0')}`);
  for (const userId of members) directory.add({ userId });
  directory.subscribe('gone', members);

  const first = await start(directory);
  const { notification } = await first.notify.notify({
    topic: 'gone',
    category: 'digest',
    data: { week: '49' },
  });
  const id = notification!.id;
  await waitForAsync(
    async () => Number((await first.notify.getNotification({ id })).notification!.progress!.usersDone) >= 100,
    'the first page of members',
    60_000,
  );
  await first.close();
  harnesses.splice(harnesses.indexOf(first), 1);

  const sql = new Client({ connectionString: db.url });
  await sql.connect();
  try {
    const sent = async () =>
      Number(
        (
          await sql.query<{ n: string }>(
            "SELECT count(*) AS n FROM inbox_messages WHERE user_id LIKE 'gone-%'",
          )
        ).rows[0]!.n,
      );
    const before = await sent();
    expect(before).toBeLessThan(600);
    // The digest category is gone from this process's config.
    const second = await start(directory, [{ name: 'comments', channels: ['inbox'] }]);
    await waitForAsync(
      async () =>
        (await second.notify.getNotification({ id })).notification!.status === NotificationStatus.FANNED_OUT,
      'the job to finish without its category',
      120_000,
    );
    expect(await sent()).toBe(before);
  } finally {
    await sql.end();
  }
}, 240_000);
