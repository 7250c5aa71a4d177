/**
 * UserService against the real app (memory stores) over gRPC (grpc-js) and Connect (JSON): the
 * normal forms and refusals, GetUser's suppressed contact points, devices and the push providers'
 * dead-token answers (local APNs and FCM servers answering 410 / UNREGISTERED), topics, DeleteUser
 * read back through every RPC and stream, and the preferences placeholder.
 */
import type * as grpc from '@grpc/grpc-js';
import { Code, ConnectError, createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { InboxEventType } from '../../../shared/gen/svc/notification/v1/inbox_pb';
import {
  Channel,
  DeliveryFailure,
  DeliveryStatus,
  SuppressionReason,
} from '../../../shared/gen/svc/notification/v1/notification_pb';
import { DevicePlatform, UserService } from '../../../shared/gen/svc/notification/v1/users_pb';
import type { NotificationConfigInput } from '../../../services/notification/config';
import {
  FAST_DELIVERY,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../support/notification-app';
import { grpcClient, unary, type GenericClient } from '../../support/grpc-clients';
import { createTestDatabase } from '../../support/database';
import {
  ecKeys,
  rsaKeys,
  startApnsPeer,
  startFcmPeer,
  type ApnsPeer,
  type FcmPeer,
} from '../channels/push/push-peers';

const apnsKeys = ecKeys();
const fcmKeys = rsaKeys();
const CLIENT_EMAIL = 'sender@project.iam.gserviceaccount.com';

let peerApns: ApnsPeer;
let peerFcm: FcmPeer;

let unique = 0;
const userId = (prefix = 'user') => `${prefix}-${Date.now().toString(36)}-${unique++}`;
const deviceToken = () => `${Date.now().toString(16)}${String(unique++).padStart(4, '0')}`.padEnd(64, 'b');

beforeAll(async () => {
  peerApns = await startApnsPeer({
    publicKey: apnsKeys.publicKey,
    keyId: 'KEY1234567',
    teamId: 'TEAM123456',
    topic: 'com.example.app',
  });
  peerFcm = await startFcmPeer({
    publicKey: fcmKeys.publicKey,
    clientEmail: CLIENT_EMAIL,
    projectId: 'proj',
  });
});

afterAll(async () => {
  await peerApns?.close();
  await peerFcm?.close();
});

async function connectError(p: Promise<unknown>): Promise<ConnectError> {
  try {
    await p;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error('expected the call to fail');
}

async function grpcError(p: Promise<unknown>): Promise<grpc.ServiceError> {
  try {
    await p;
  } catch (err) {
    return err as grpc.ServiceError;
  }
  throw new Error('expected the call to fail');
}

/** Polls until the condition holds; a deadline against hangs, not a timing assertion. */
async function until(condition: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.each([
  ['memory stores', false],
  ['PostgreSQL stores', true],
])('UserService (%s)', (_label, useDatabase) => {
  let n: RunningNotificationApp;
  let users: Client<typeof UserService>;
  let usersGrpc: GenericClient;
  let dropDb: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    const config: NotificationConfigInput = {
      delivery: FAST_DELIVERY,
      push_backends: [
        {
          name: 'apns',
          primary: true,
          driver: 'push_driver_b',
          push_driver_b: {
            key_id: 'KEY1234567',
            team_id: 'TEAM123456',
            private_key: apnsKeys.privatePem,
            topic: 'com.example.app',
            base_url: peerApns.baseUrl,
          },
        },
        {
          name: 'fcm',
          driver: 'push_driver_a',
          push_driver_a: {
            project_id: 'proj',
            service_account: {
              client_email: CLIENT_EMAIL,
              private_key: fcmKeys.privatePem,
              token_uri: peerFcm.tokenUri,
            },
            base_url: peerFcm.baseUrl,
          },
        },
      ],
      users: { default_page_size: 2 },
      notify: { categories: [{ name: 'digest', channels: ['inbox', 'email'], defaults: { email: false } }] },
    };
    if (useDatabase) {
      // Users, inbox and deliveries all in the database (the users follow delivery.store_backend).
      const db = await createTestDatabase('userrpc');
      dropDb = () => db.drop();
      config.database = { url: db.url };
      config.inbox = { store_backend: 'database' };
      config.delivery = { ...FAST_DELIVERY, store_backend: 'database' };
    }
    n = await startNotificationApp(config);
    users = createClient(UserService, createConnectTransport({ baseUrl: n.baseUrl, httpVersion: '1.1' }));
    usersGrpc = grpcClient(UserService, n.grpcAddress);
  });

  afterAll(async () => {
    usersGrpc?.close();
    await n?.close();
    await dropDb?.();
  });

  describe('UpsertUser and GetUser', () => {
    test('a user upserted over gRPC reads back normalised over Connect, attributes in emoji, CJK and RTL included', async () => {
      const id = userId();
      const { response } = await unary<{ created: boolean; user: { emails: string[]; locale: string } }>(
        usersGrpc,
        'upsertUser',
        {
          userId: id,
          emails: [' Ana@Example.COM', 'ana@example.com'],
          phones: ['+34 600 123 456'],
          locale: 'es-mx',
          timeZone: 'america/mexico_city',
          attributes: { name: 'Ana 😀 中文 עברית', vip: true },
        },
      );
      expect(response.created).toBe(true);
      const { user } = await users.getUser({ userId: id });
      expect(user).toMatchObject({
        userId: id,
        emails: ['Ana@example.com'],
        phones: ['+34600123456'],
        locale: 'es-MX',
        timeZone: 'America/Mexico_City',
        attributes: { name: 'Ana 😀 中文 עברית', vip: true },
        devices: [],
        suppressed: [],
      });
      expect((await users.upsertUser({ userId: id })).created).toBe(false);
      if (useDatabase) {
        // The users follow delivery.store_backend: the row is in the service's database.
        const rows = await n.app.storage!.knex('users').where({ user_id: id }).select('locale');
        expect(rows).toEqual([{ locale: '' }]);
      }
    });

    test('bad input is INVALID_ARGUMENT naming the field (gRPC and Connect), an unknown user NOT_FOUND', async () => {
      const locale = await grpcError(unary(usersGrpc, 'upsertUser', { userId: userId(), locale: 'x!' }));
      expect(locale.code).toBe(3);
      expect(locale.details).toContain('locale');
      const zone = await connectError(users.upsertUser({ userId: userId(), timeZone: 'Nowhere/Atlantis' }));
      expect(zone.code).toBe(Code.InvalidArgument);
      expect(zone.rawMessage).toContain('time_zone');
      const id = await connectError(users.upsertUser({ userId: 'x'.repeat(129) }));
      expect(id.code).toBe(Code.InvalidArgument);
      expect((await connectError(users.getUser({ userId: userId('ghost') }))).code).toBe(Code.NotFound);
    });

    test('quiet hours go in over gRPC and read back over Connect; unset on upsert means none; a bad window is INVALID_ARGUMENT naming it', async () => {
      const id = userId();
      const quietHours = {
        windows: [
          { days: [5, 1], start: '22:00', end: '07:00' },
          { days: [], start: '13:00', end: '14:30' },
        ],
        holdEmail: true,
      };
      const { response } = await unary<{ user: { quietHours: unknown } }>(usersGrpc, 'upsertUser', {
        userId: id,
        timeZone: 'Europe/Madrid',
        quietHours,
      });
      const expected = {
        windows: [
          { days: [1, 5], start: '22:00', end: '07:00' },
          { days: [], start: '13:00', end: '14:30' },
        ],
        holdEmail: true,
      };
      expect(response.user.quietHours).toMatchObject(expected);
      const { user } = await users.getUser({ userId: id });
      expect(user?.quietHours).toMatchObject(expected);
      await users.upsertUser({ userId: id, timeZone: 'Europe/Madrid' });
      const cleared = (await users.getUser({ userId: id })).user?.quietHours;
      expect(cleared?.windows ?? []).toEqual([]);
      expect(cleared?.holdEmail ?? false).toBe(false);
      const bad = await connectError(
        users.upsertUser({
          userId: id,
          quietHours: { windows: [...quietHours.windows, { days: [2], start: '25:00', end: '07:00' }] },
        }),
      );
      expect(bad.code).toBe(Code.InvalidArgument);
      expect(bad.rawMessage).toContain('quiet_hours.windows[2].start');
    });

    test('GetUser lists the contact points on the suppression list with their reasons', async () => {
      const id = userId();
      const [email, phone] = [`Bounced.${unique++}@example.com`, `+1555${String(1000000 + unique++)}`];
      await users.upsertUser({ userId: id, emails: [email, 'fine@example.com'], phones: [phone] });
      await unary(n.notificationGrpc, 'addSuppression', {
        channel: Channel.EMAIL,
        recipient: email.toLowerCase(),
        reason: SuppressionReason.HARD_BOUNCE,
      });
      await unary(n.notificationGrpc, 'addSuppression', {
        channel: Channel.SMS,
        recipient: phone,
        reason: SuppressionReason.STOP_KEYWORD,
      });
      const { user } = await users.getUser({ userId: id });
      expect(
        user?.suppressed.map((s) => ({ channel: s.channel, address: s.address, reason: s.reason })),
      ).toEqual([
        { channel: 'email', address: email, reason: 'hard_bounce' },
        { channel: 'sms', address: phone, reason: 'stop_keyword' },
      ]);
    });
  });

  describe('devices', () => {
    test('platform UNSPECIFIED and an unconfigured backend are INVALID_ARGUMENT; the message lists the backends', async () => {
      const id = userId();
      await users.upsertUser({ userId: id });
      const platform = await connectError(users.registerDevice({ userId: id, token: deviceToken() }));
      expect(platform.code).toBe(Code.InvalidArgument);
      expect(platform.rawMessage).toContain('platform');
      const backend = await connectError(
        users.registerDevice({
          userId: id,
          token: deviceToken(),
          platform: DevicePlatform.FCM,
          backend: 'nope',
        }),
      );
      expect(backend.code).toBe(Code.InvalidArgument);
      expect(backend.rawMessage).toContain('apns, fcm');
      const ok = await users.registerDevice({
        userId: id,
        token: deviceToken(),
        platform: DevicePlatform.FCM,
        backend: 'fcm',
      });
      expect(ok.device).toMatchObject({ platform: DevicePlatform.FCM, backend: 'fcm' });
      expect((await users.getUser({ userId: id })).user?.devices).toHaveLength(1);
      await users.unregisterDevice({ userId: id, token: ok.device!.token });
      expect((await users.getUser({ userId: id })).user?.devices).toHaveLength(0);
      expect((await connectError(users.unregisterDevice({ userId: id, token: ok.device!.token }))).code).toBe(
        Code.NotFound,
      );
    });

    test.each([
      ['APNs answering 410 Unregistered', 'apns', DevicePlatform.APNS],
      ['FCM answering UNREGISTERED', 'fcm', DevicePlatform.FCM],
    ] as const)(
      "when %s, the token leaves the user's devices by itself; the others stay",
      async (_label, backend, platform) => {
        const id = userId();
        const [dead, alive] = [deviceToken(), deviceToken()];
        await users.upsertUser({ userId: id });
        await users.registerDevice({ userId: id, token: dead, platform, backend });
        await users.registerDevice({ userId: id, token: alive, platform, backend });
        (backend === 'apns' ? peerApns : peerFcm).unregistered.add(dead);

        const { response } = await unary<{ deliveryId: string }>(n.notificationGrpc, 'sendPush', {
          backend,
          message: { deviceToken: dead, title: 'Hi', body: 'There' },
        });
        await until(
          async () => ((await users.getUser({ userId: id })).user?.devices.length ?? 0) === 1,
          'the dead token to be forgotten',
        );
        expect((await users.getUser({ userId: id })).user?.devices.map((d) => d.token)).toEqual([alive]);
        const delivery = await unary<{ delivery: { status: DeliveryStatus; failure: DeliveryFailure } }>(
          n.notificationGrpc,
          'getDelivery',
          { id: response.deliveryId },
        );
        expect(delivery.response.delivery).toMatchObject({
          status: DeliveryStatus.FAILED,
          failure: DeliveryFailure.RECIPIENT_UNREGISTERED,
        });
      },
    );
  });

  describe('topics', () => {
    test('SubscribeTopic with an unknown user is NOT_FOUND naming it and adds nobody; pages walk the members by token', async () => {
      const topic = `news.${userId('t')}`;
      const ids = [userId('c'), userId('a'), userId('b')];
      for (const id of ids) await users.upsertUser({ userId: id });
      const ghost = userId('ghost');
      const missing = await connectError(users.subscribeTopic({ topic, userIds: [ids[0]!, ghost] }));
      expect(missing.code).toBe(Code.NotFound);
      expect(missing.rawMessage).toContain(ghost);
      expect((await users.listTopicSubscribers({ topic })).userIds).toEqual([]);

      expect((await users.subscribeTopic({ topic, userIds: ids })).added).toBe(3);
      const first = await users.listTopicSubscribers({ topic });
      expect(first.userIds).toHaveLength(2);
      const second = await users.listTopicSubscribers({ topic, pageToken: first.nextPageToken });
      expect(second.nextPageToken).toBe('');
      expect([...first.userIds, ...second.userIds]).toEqual([...ids].sort());
      expect((await users.unsubscribeTopic({ topic, userIds: [ids[0]!, ghost] })).removed).toBe(1);
      const bad = await connectError(users.listTopicSubscribers({ topic, pageToken: 'garbage' }));
      expect(bad.code).toBe(Code.InvalidArgument);
    });

    test('more than notify.max_topic_batch ids in one call is INVALID_ARGUMENT naming user_ids', async () => {
      const err = await connectError(
        users.subscribeTopic({ topic: 't', userIds: Array.from({ length: 1001 }, (_, i) => `u${i}`) }),
      );
      expect(err.code).toBe(Code.InvalidArgument);
      expect(err.rawMessage).toContain('user_ids');
    });
  });

  describe('DeleteUser', () => {
    test('after DeleteUser: GetUser NOT_FOUND, the inbox empty, WatchInbox replays no old content, the topic lacks the user, the token is free', async () => {
      const id = userId('erased');
      const other = userId('other');
      const topic = `t.${userId('topic')}`;
      const token = deviceToken();
      // Where the user's events start: the cursor of a watch opened before any (a memory store's log
      // is numbered past every earlier process's, so "0" would be older than its horizon: a reset).
      let start = '';
      for await (const e of n.inboxConnect.watchInbox({ userId: id })) {
        start = e.cursor;
        break;
      }
      await users.upsertUser({ userId: id, emails: ['secret@example.com'] });
      await users.upsertUser({ userId: other });
      await users.registerDevice({ userId: id, token, platform: DevicePlatform.APNS });
      await users.subscribeTopic({ topic, userIds: [id, other] });
      await n.inboxConnect.send({ userId: id, title: 'Secret title 😀', body: 'secret body' });
      await n.inboxConnect.send({ userId: id, title: 'Second secret', body: '' });

      await users.deleteUser({ userId: id });

      expect((await connectError(users.getUser({ userId: id }))).code).toBe(Code.NotFound);
      const inbox = await n.inboxConnect.getInbox({ userId: id });
      expect(inbox.messages).toEqual([]);
      expect(inbox.unreadCount).toBe(0);
      expect((await users.listTopicSubscribers({ topic })).userIds).toEqual([other]);
      // The token can be registered by someone else, and is theirs alone.
      await users.registerDevice({ userId: other, token, platform: DevicePlatform.APNS });
      expect((await users.getUser({ userId: other })).user?.devices.map((d) => d.token)).toEqual([token]);

      // A replay from the start shows that messages came and went, never what they said. A marker
      // sent afterwards ends the replay.
      await n.inboxConnect.send({ userId: id, title: 'marker', body: '' });
      const controller = new AbortController();
      const replayed: { type: InboxEventType; title?: string }[] = [];
      await (async () => {
        for await (const e of n.inboxConnect.watchInbox(
          { userId: id, afterCursor: start },
          { signal: controller.signal },
        )) {
          replayed.push({ type: e.type, title: e.message?.title });
          if (e.message?.title === 'marker') controller.abort();
        }
      })().catch(() => undefined);
      const before = replayed.slice(0, -1);
      expect(before.filter((e) => e.type === InboxEventType.SENT)).toHaveLength(2);
      expect(before.every((e) => e.title === undefined)).toBe(true);
      expect(JSON.stringify(replayed)).not.toContain('ecret');
      // DeleteUser again: NOT_FOUND.
      expect((await connectError(users.deleteUser({ userId: id }))).code).toBe(Code.NotFound);
    });
  });

  test('preferences are the defaults until chosen, and DeleteUser erases the choices', async () => {
    const id = userId();
    await users.upsertUser({ userId: id });
    const email = async () =>
      (await users.getPreferences({ userId: id })).preferences.find((p) => p.channel === 'email')!;
    expect(await email()).toMatchObject({ category: 'digest', enabled: false, chosen: false });
    await users.updatePreferences({
      userId: id,
      preferences: [{ category: 'digest', channel: 'email', enabled: true }],
    });
    expect(await email()).toMatchObject({ enabled: true, chosen: true });
    // DeleteUser erases the choice: the same id upserted again starts from the defaults.
    await users.deleteUser({ userId: id });
    await users.upsertUser({ userId: id });
    expect(await email()).toMatchObject({ enabled: false, chosen: false });
  });
});
