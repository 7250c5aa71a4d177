/**
 * The service itself across a restart, on PostgreSQL: a notification scheduled through Notify on one
 * process that stops before it is due is sent by the next process on the same database (its due
 * runner started by the service's lifecycle), exactly once.
 */
import { NotificationStatus } from '../../../shared/gen/svc/notification/v1/notify_pb';
import { createTestDatabase } from '../../support/database';
import { FakeDirectory } from './fakes';
import { startNotifyHarness, waitForAsync, type NotifyHarness } from './support';

let db: { url: string; drop(): Promise<void> };
const harnesses: NotifyHarness[] = [];

beforeAll(async () => {
  db = await createTestDatabase('notifyschedrestart');
});

afterAll(async () => {
  for (const h of harnesses) await h.close().catch(() => undefined);
  await db?.drop();
});

async function start(directory: FakeDirectory): Promise<NotifyHarness> {
  const h = await startNotifyHarness(
    {
      database: { url: db.url },
      inbox: { store_backend: 'database' },
      delivery: { store_backend: 'database' },
    },
    { peers: false, directory, dueRunner: { pollMs: 50 } },
  );
  h.renderer.set('digest', 'inbox', 'en', { title: 'Weekly 😀', body: '{{ data.week }}' });
  harnesses.push(h);
  return h;
}

it('scheduled on a process that stopped before it was due, it is sent once by the next process', async () => {
  const directory = new FakeDirectory();
  directory.add({ userId: 'restart-user' });
  const first = await start(directory);
  const { notification } = await first.notify.notify({
    userId: 'restart-user',
    category: 'digest',
    data: { week: '48 שלום 你好' },
    delay: { seconds: 2n, nanos: 0 },
  });
  expect(notification!.status).toBe(NotificationStatus.SCHEDULED);
  await first.close();

  const second = await start(directory);
  const id = notification!.id;
  await waitForAsync(
    async () =>
      (await second.notify.getNotification({ id })).notification!.status === NotificationStatus.FANNED_OUT,
    'the scheduled notification to go out from the new process',
    30_000,
  );
  // Well past its time: one inbox message, the one of its line.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const inbox = await second.running.app.inbox.getInbox('restart-user');
  expect(inbox.messages.map((m) => [m.title, m.body])).toEqual([['Weekly 😀', '48 שלום 你好']]);
  const got = (await second.notify.getNotification({ id })).notification!;
  expect(got.channels.map((l) => l.messageId)).toEqual([inbox.messages[0]!.id]);
}, 90_000);
