import type * as grpc from '@grpc/grpc-js';
import { InboxEventType, InboxService } from '../../shared/gen/svc/notification/v1/inbox_pb';
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
  type Frame = { type: number; message?: { title: string } };
  try {
    const call = (onB.watchInbox as (r: unknown) => grpc.ClientReadableStream<Frame>).call(onB, {
      userId: 'replica-user',
    });
    call.on('error', () => undefined);
    const frames: Frame[] = [];
    let notify: () => void = () => undefined;
    call.on('data', (frame: Frame) => {
      frames.push(frame);
      notify();
    });
    const frameCount = (n: number) =>
      new Promise<void>((resolve) => {
        notify = () => frames.length >= n && resolve();
        notify();
      });
    // The first frame says the watch on B is live: what A sends from now on must reach it.
    await frameCount(1);
    expect(frames[0]!.type).toBe(InboxEventType.LIVE);
    await unary(onA, 'send', { userId: 'replica-user', title: 'hello from A', body: '' });
    await frameCount(2);
    call.cancel();
    expect(frames[1]).toMatchObject({ type: InboxEventType.SENT, message: { title: 'hello from A' } });
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
