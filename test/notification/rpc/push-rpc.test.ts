/**
 * SendPush and SendPushBatch against the real app and a local HTTP/2 APNs server: records through
 * the pipeline (memory store and real PostgreSQL), a batch of 1,000 with 10 unregistered tokens over
 * one session, bad input refused with INVALID_ARGUMENT naming the field and nothing recorded, the
 * batch limit, no backend configured, and the backend's health check.
 */
import * as grpc from '@grpc/grpc-js';
import { Code, ConnectError } from '@connectrpc/connect';
import {
  AttemptOutcome,
  Channel,
  DeliveryStatus,
  PushPriority,
} from '../../../shared/gen/svc/notification/v1/notification_pb';
import type { NotificationConfigInput } from '../../../services/notification/config';
import {
  FAST_DELIVERY,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../support/notification-app';
import { createTestDatabase } from '../../support/database';
import { unary } from '../../support/grpc-clients';
import { ecKeys, startApnsPeer, type ApnsPeer } from '../channels/push/push-peers';
import { grpcError } from '../../support/call-errors';

const KEY_ID = 'KEY1234567';
const TEAM_ID = 'TEAM123456';
const TOPIC = 'com.example.app';
const keys = ecKeys();

type WireDelivery = {
  id: string;
  channel: Channel;
  backend: string;
  status: DeliveryStatus;
  recipient: string;
  providerReference: string;
  attemptLog: { outcome: AttemptOutcome }[];
};
type BatchResult = { index: number; deliveryId: string; status: DeliveryStatus };

function token(i: number): string {
  return i.toString(16).padStart(64, '0');
}

function pushBackends(peer: ApnsPeer): NotificationConfigInput['push_backends'] {
  return [
    {
      name: 'apns',
      driver: 'push_driver_b',
      push_driver_b: {
        key_id: KEY_ID,
        team_id: TEAM_ID,
        private_key: keys.privatePem,
        topic: TOPIC,
        base_url: peer.baseUrl,
      },
    },
  ];
}

/** Polls an async condition until it holds; a deadline against hangs, not a timing assertion. */
async function until(condition: () => Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.each([
  ['memory store', false],
  ['PostgreSQL store', true],
])('SendPush / SendPushBatch (%s)', (_label, useDatabase) => {
  let peer: ApnsPeer;
  let n: RunningNotificationApp;
  let dropDb: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    peer = await startApnsPeer({ publicKey: keys.publicKey, keyId: KEY_ID, teamId: TEAM_ID, topic: TOPIC });
    const overrides: NotificationConfigInput = {
      push_backends: pushBackends(peer),
      delivery: { ...FAST_DELIVERY, max_batch_size: 1000, concurrency: 64 },
    };
    if (useDatabase) {
      const db = await createTestDatabase('pushrpc');
      dropDb = () => db.drop();
      overrides.database = { url: db.url };
      overrides.delivery = { ...overrides.delivery, store_backend: 'database' };
    }
    n = await startNotificationApp(overrides);
  });
  afterAll(async () => {
    await n?.close();
    await peer?.close();
    await dropDb?.();
  });

  const get = async (id: string) =>
    (await unary<{ delivery: WireDelivery }>(n.notificationGrpc, 'getDelivery', { id })).response.delivery;
  const list = async () =>
    (await unary<{ deliveries: WireDelivery[] }>(n.notificationGrpc, 'listDeliveries', { pageSize: 500 }))
      .response.deliveries;

  test('SendPush records a delivery that becomes SENT with the apns-id', async () => {
    const { response } = await unary<{ deliveryId: string; status: DeliveryStatus }>(
      n.notificationGrpc,
      'sendPush',
      {
        message: {
          deviceToken: token(1),
          title: 'Hi',
          body: 'There',
          data: { k: 'v' },
          collapseKey: 'c1',
          ttlSeconds: 0,
          priority: PushPriority.HIGH,
        },
      },
    );
    expect(response.status).toBe(DeliveryStatus.PENDING);
    let d = await get(response.deliveryId);
    await until(async () => (d = await get(response.deliveryId)).status === DeliveryStatus.SENT, 'SENT');
    expect(d.status).toBe(DeliveryStatus.SENT);
    expect(d.channel).toBe(Channel.PUSH);
    expect(d.backend).toBe('apns');
    expect(d.recipient).not.toContain(token(1));
    const sent = peer.requests.find((r) => r.token === token(1))!;
    expect(d.providerReference).toBe(sent.headers['apns-id'] ?? d.providerReference);
    expect(sent.headers['apns-collapse-id']).toBe('c1');
    expect(sent.headers['apns-expiration']).toBe('0');
    expect(sent.headers['apns-priority']).toBe('10');
    expect(sent.body).toEqual({ k: 'v', aps: { alert: { title: 'Hi', body: 'There' } } });
  });

  test('a batch of 1,000 with 10 unregistered tokens: 990 SENT, 10 recipient failures, one session', async () => {
    const sessionsBefore = peer.sessions;
    const base = 10_000;
    for (let i = 7; i < 1000; i += 100) peer.unregistered.add(token(base + i));
    const messages = Array.from({ length: 1000 }, (_, i) => ({
      deviceToken: token(base + i),
      body: `n${i}`,
    }));

    const { response } = await unary<{ results: BatchResult[] }>(n.notificationGrpc, 'sendPushBatch', {
      messages,
      idempotencyKey: `batch-${useDatabase}`,
    });

    expect(response.results.map((r) => r.index)).toEqual(messages.map((_, i) => i));
    const ids = response.results.map((r) => r.deliveryId);
    expect(new Set(ids).size).toBe(1000);
    // Wait until every delivery is final, reading the listing (2 pages per status), not 1,000 gets.
    const finalOnes = async () => {
      const out: WireDelivery[] = [];
      for (const status of [DeliveryStatus.SENT, DeliveryStatus.FAILED]) {
        let pageToken = '';
        do {
          const { response: page } = await unary<{ deliveries: WireDelivery[]; nextPageToken: string }>(
            n.notificationGrpc,
            'listDeliveries',
            { pageSize: 500, pageToken, status, channel: Channel.PUSH },
          );
          out.push(...page.deliveries);
          pageToken = page.nextPageToken;
        } while (pageToken);
      }
      return out.filter((d) => ids.includes(d.id));
    };
    let final: WireDelivery[] = [];
    await until(async () => (final = await finalOnes()).length === 1000, 'every delivery final');
    const byId = new Map(final.map((d) => [d.id, d]));
    expect(final).toHaveLength(1000);
    ids.forEach((id, i) => {
      const d = byId.get(id)!;
      if (peer.unregistered.has(token(base + i))) {
        expect(d.status).toBe(DeliveryStatus.FAILED);
        expect(d.attemptLog.map((a) => a.outcome)).toEqual([AttemptOutcome.RECIPIENT_FAILURE]);
      } else expect(d.status).toBe(DeliveryStatus.SENT);
    });
    expect(final.filter((d) => d.status === DeliveryStatus.SENT)).toHaveLength(990);
    // One session per backend: the batch went over the one the first test opened.
    expect(sessionsBefore).toBe(1);
    expect(peer.sessions).toBe(1);

    // The same batch again with the same key returns the same deliveries and sends nothing.
    const sentBefore = peer.requests.length;
    const again = await unary<{ results: BatchResult[] }>(n.notificationGrpc, 'sendPushBatch', {
      messages,
      idempotencyKey: `batch-${useDatabase}`,
    });
    expect(again.response.results.map((r) => r.deliveryId)).toEqual(ids);
    expect(peer.requests.length).toBe(sentBefore);
  });

  test.each([
    ['an empty device token', { message: { deviceToken: '', body: 'x' } }, 'message.device_token'],
    [
      'an absurdly long device token',
      { message: { deviceToken: 'a'.repeat(5000), body: 'x' } },
      'message.device_token',
    ],
    ['a device token with spaces', { message: { deviceToken: 'ab cd', body: 'x' } }, 'message.device_token'],
    ['a payload over 4 KB', { message: { deviceToken: token(2), body: 'x'.repeat(5000) } }, 'message'],
    [
      'a collapse key over 64 bytes',
      { message: { deviceToken: token(2), body: 'x', collapseKey: 'k'.repeat(65) } },
      'message.collapse_key',
    ],
    [
      'a ttl over four weeks',
      { message: { deviceToken: token(2), body: 'x', ttlSeconds: 99_999_999 } },
      'message.ttl_seconds',
    ],
    ['no content', { message: { deviceToken: token(2) } }, 'message.body'],
    ['an unknown backend', { message: { deviceToken: token(2), body: 'x' }, backend: 'nope' }, 'backend'],
  ])('SendPush with %s is INVALID_ARGUMENT naming the field, nothing recorded', async (_what, req, field) => {
    const before = (await list()).length;
    const err = await grpcError(unary(n.notificationGrpc, 'sendPush', req));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toContain(field);
    expect((await list()).length).toBe(before);
  });

  test('a batch with one bad message records nothing; over max_batch_size is refused', async () => {
    const before = (await list()).length;
    const bad = await grpcError(
      unary(n.notificationGrpc, 'sendPushBatch', {
        messages: [
          { deviceToken: token(3), body: 'ok' },
          { deviceToken: '', body: 'bad' },
        ],
      }),
    );
    expect(bad.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(bad.details).toContain('messages[1].device_token');
    const tooMany = await grpcError(
      unary(n.notificationGrpc, 'sendPushBatch', {
        messages: Array.from({ length: 1001 }, (_, i) => ({ deviceToken: token(i), body: 'x' })),
      }),
    );
    expect(tooMany.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(tooMany.details).toContain('max_batch_size');
    const empty = await grpcError(unary(n.notificationGrpc, 'sendPushBatch', { messages: [] }));
    expect(empty.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect((await list()).length).toBe(before);
  });

  test('the backend has a health check', async () => {
    const res = await fetch(`${n.baseUrl}/health`);
    const body = (await res.json()) as { checks: Record<string, { status: string }> };
    expect(body.checks['notifications.push.apns']!.status).toBe('healthy');
  });
});

describe('SendPush without push backends', () => {
  test('is FAILED_PRECONDITION "no push backend configured" over gRPC and Connect', async () => {
    const n = await startNotificationApp({ delivery: FAST_DELIVERY });
    try {
      const err = await grpcError(
        unary(n.notificationGrpc, 'sendPush', { message: { deviceToken: token(1), body: 'x' } }),
      );
      expect(err.code).toBe(grpc.status.FAILED_PRECONDITION);
      expect(err.details).toContain('no push backend configured');
      const viaConnect = await n.notificationConnect
        .sendPushBatch({ messages: [{ deviceToken: token(1), body: 'x' }] })
        .then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        );
      expect(viaConnect?.code).toBe(Code.FailedPrecondition);
    } finally {
      await n.close();
    }
  });
});
