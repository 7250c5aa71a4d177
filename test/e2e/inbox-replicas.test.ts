import type * as grpc from '@grpc/grpc-js';
import { InboxService } from '../../shared/gen/svc/notification/v1/inbox_pb';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';
import { createTestDatabase } from '../support/database';
import { grpcClient, unary } from '../support/grpc-clients';

// Two notification processes on one PostgreSQL: an inbox event written through one replica reaches
// a WatchInbox subscriber connected to the other (PostgreSQL LISTEN/NOTIFY between the hubs).
let db: { url: string; drop(): Promise<void> };
let a: ServiceProcess;
let b: ServiceProcess;

beforeAll(async () => {
  db = await createTestDatabase('replicas');
  const env = { SVC_NOTIFICATION__DATABASE__URL: db.url };
  a = await startServiceProcess('notification', env);
  b = await startServiceProcess('notification', env);
});

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await db?.drop();
});

test('a message sent through one replica reaches a WatchInbox subscriber on the other', async () => {
  const onB = grpcClient(InboxService, `127.0.0.1:${b.grpcPort}`);
  const onA = grpcClient(InboxService, `127.0.0.1:${a.grpcPort}`);
  try {
    const call = (
      onB.watchInbox as (r: unknown) => grpc.ClientReadableStream<{ message?: { title: string } }>
    ).call(onB, { userId: 'replica-user' });
    call.on('error', () => undefined);
    const received = new Promise<string>((resolve) =>
      call.on('data', (e: { message?: { title: string } }) => resolve(e.message?.title ?? '')),
    );
    // The subscription is registered asynchronously; send until the first event arrives, each send
    // with a distinct title, and check that the first title received is one that was sent via A.
    const sent: string[] = [];
    let got: string | undefined;
    void received.then((t) => (got = t));
    for (let i = 0; i < 50 && got === undefined; i++) {
      const title = `hello from A #${i}`;
      await unary(onA, 'send', { userId: 'replica-user', title, body: '' });
      sent.push(title);
      await new Promise((r) => setTimeout(r, 100));
    }
    call.cancel();
    expect(got).toBeDefined();
    expect(sent).toContain(got);
  } finally {
    onA.close();
    onB.close();
  }
});

test('both replicas see the same inbox', async () => {
  const onA = grpcClient(InboxService, `127.0.0.1:${a.grpcPort}`);
  const onB = grpcClient(InboxService, `127.0.0.1:${b.grpcPort}`);
  try {
    const sent = await unary<{ message: { id: string } }>(onA, 'send', {
      userId: 'shared',
      title: 't',
      body: '',
    });
    await unary(onB, 'markRead', { userId: 'shared', messageId: sent.response.message.id });
    const count = await unary<{ unreadCount: number }>(onA, 'countUnread', { userId: 'shared' });
    expect(count.response.unreadCount).toBe(0);
  } finally {
    onA.close();
    onB.close();
  }
});
