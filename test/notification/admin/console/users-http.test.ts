/**
 * The console's users section over HTTP on the real service (memory stores): a user's card (contact
 * points and device tokens masked, quiet hours, preferences, latest notifications of every caller,
 * unread count), 404 for an unknown user, and the erasure behind a typed confirmation, checked
 * through the domain stores afterwards.
 */
import { randomUUID } from 'node:crypto';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { TemplateChannel, TemplateService } from '../../../../shared/gen/svc/notification/v1/templates_pb';
import { CONSOLE_API_PATH } from '../../../../services/notification/admin/console/console-gateway';
import { USER_RECENT_NOTIFICATIONS } from '../../../../services/notification/admin/console/sections/users';
import { USER_DELETED_ERROR } from '../../../../services/notification/delivery/store';
import type { RunningNotificationApp } from '../../../support/notification-app';
import { authed, errorOf, hsToken, operatorToken, startAdminService } from '../harness';

let svc: RunningNotificationApp;
let token: string;

beforeAll(async () => {
  svc = await startAdminService({
    notify: {
      categories: [
        { name: 'security', channels: ['inbox', 'sms'], required: true },
        { name: 'comments', channels: ['inbox', 'email'], defaults: { email: false } },
        { name: 'news', channels: ['email'] },
      ],
    },
    // A provider that never answers: a delivery stays queued until the user is erased.
    mailer: {
      backends: [
        {
          name: 'api',
          driver: 'http_api',
          from_email: 'noreply@example.com',
          http_api: { base_url: 'http://127.0.0.1:1', api_key: 'SG.users-test-key', timeout_ms: 500 },
        },
      ],
    },
    delivery: { base_delay_ms: 60_000, max_delay_ms: 60_000 },
  });
  token = await operatorToken('ops-ann');
  const templates = createClient(
    TemplateService,
    createConnectTransport({ baseUrl: svc.baseUrl, httpVersion: '1.1', useBinaryFormat: false }),
  );
  await templates.upsertTemplate({
    category: 'news',
    channel: TemplateChannel.EMAIL,
    locale: 'fr-CA',
    content: { subject: 'Nouvelles', text: 'Bonjour' },
  });
});
afterAll(() => svc?.close());

const userUrl = (id: string) => `${svc.baseUrl}${CONSOLE_API_PATH}/users/${encodeURIComponent(id)}`;

function get(id: string): Promise<Response> {
  return fetch(userUrl(id), authed(token));
}

function erase(id: string, body: unknown, how: 'DELETE' | 'POST' = 'POST'): Promise<Response> {
  return fetch(
    how === 'POST' ? `${userUrl(id)}/erase` : userUrl(id),
    authed(token, {
      method: how,
      headers: { 'Content-Type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    }),
  );
}

async function addUser(userId: string) {
  await svc.app.users.upsertUser({
    userId,
    emails: ['jane.doe@example.com'],
    phones: ['+15550104567'],
    locale: 'fr-CA',
    timeZone: 'America/Toronto',
    attributes: { plan: 'pro', name: 'Jane' },
    quietHours: { windows: [{ days: [1, 2], start: '22:00', end: '07:00' }], holdEmail: false },
  });
  await svc.app.users.registerDevice(userId, { token: 'f'.repeat(60) + 'abcd', platform: 'fcm' });
}

function notify(userId: string, scope: string, key = randomUUID()) {
  return svc.app.notifier.notify(
    {
      userId,
      topic: '',
      category: 'comments',
      data: { text: 'hi' },
      overrides: [],
      priority: 'normal',
      idempotencyKey: key,
    },
    scope,
  );
}

interface UserJson {
  user_id: string;
  emails: string[];
  phones: string[];
  devices: { platform: string; token: string; backend: string | null; registered_at: string }[];
  preferences: { category: string; channel: string; enabled: boolean; required: boolean; chosen: boolean }[];
  notifications: { id: string; category: string; created_at: string }[];
  inbox_unread: number;
  [key: string]: unknown;
}

describe('console users: the card', () => {
  it('shows the user with contact points and tokens masked, preferences, and notifications of every caller', async () => {
    const id = `jane-${randomUUID()}`;
    await addUser(id);
    // The user's own choice, made on their admin page.
    const chose = await fetch(
      `${svc.baseUrl}/admin/notifications/preferences`,
      authed(await hsToken(id), {
        method: 'PUT',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ preferences: [{ category: 'comments', channel: 'email', enabled: true }] }),
      }),
    );
    expect(chose.status).toBe(200);
    const first = await notify(id, 'caller-a');
    const second = await notify(id, 'caller-b');
    await svc.app.inbox.send({ userId: id, title: 'Hello', body: 'there' });
    const res = await get(id);
    expect(res.status).toBe(200);
    const text = await res.text();
    // Never a full contact point or token.
    expect(text).not.toContain('jane.doe@example.com');
    expect(text).not.toContain('+15550104567');
    expect(text).not.toContain('f'.repeat(20));
    // Attributes are named, their values not shown.
    expect(text).not.toContain('Jane"');
    const body = JSON.parse(text) as UserJson;
    expect(body).toMatchObject({
      user_id: id,
      locale: 'fr-CA',
      time_zone: 'America/Toronto',
      emails: [expect.stringMatching(/^j\*+@example\.com$/)],
      phones: [expect.stringMatching(/\*/)],
      quiet_hours: { windows: [{ days: [1, 2], start: '22:00', end: '07:00' }], hold_email: false },
      attribute_names: ['name', 'plan'],
      inbox_unread: expect.any(Number),
    });
    expect(body.devices).toEqual([
      { platform: 'fcm', token: 'ffff…abcd', backend: null, registered_at: expect.any(String) },
    ]);
    expect(body.preferences).toEqual(
      expect.arrayContaining([
        { category: 'security', channel: 'sms', enabled: true, required: true, chosen: false },
        { category: 'comments', channel: 'email', enabled: true, required: false, chosen: true },
      ]),
    );
    // Both callers' notifications, newest first.
    expect(body.notifications.map((n) => n.id)).toEqual([second.notification.id, first.notification.id]);
    expect(body.inbox_unread).toBeGreaterThanOrEqual(1);
  });

  it(`lists the newest ${USER_RECENT_NOTIFICATIONS} notifications, at and past the bound`, async () => {
    const id = `many-${randomUUID()}`;
    await addUser(id);
    const ids: string[] = [];
    for (let i = 0; i < USER_RECENT_NOTIFICATIONS; i++) ids.push((await notify(id, 'c')).notification.id);
    const at = (await (await get(id)).json()) as UserJson;
    expect(at.notifications).toHaveLength(USER_RECENT_NOTIFICATIONS);
    const newest = (await notify(id, 'c')).notification.id;
    const past = (await (await get(id)).json()) as UserJson;
    expect(past.notifications).toHaveLength(USER_RECENT_NOTIFICATIONS);
    expect(past.notifications.map((n) => n.id)).toContain(newest);
    // Newest first by (created_at, id); the one left out is the oldest of the 21.
    const key = (n: { id: string; created_at: string }) => `${n.created_at} ${n.id}`;
    const shown = past.notifications.map(key);
    expect(shown).toEqual([...shown].sort().reverse());
    const left = at.notifications.filter((n) => !past.notifications.some((p) => p.id === n.id));
    expect(left).toHaveLength(1);
    expect(key(left[0]!) < shown[shown.length - 1]!).toBe(true);
    expect(ids).toContain(left[0]!.id);
  });

  it("never shows another user's notifications", async () => {
    const a = `ann-${randomUUID()}`;
    const b = `bob-${randomUUID()}`;
    await addUser(a);
    await addUser(b);
    const mine = await notify(a, 'c');
    const body = (await (await get(b)).json()) as UserJson;
    expect(body.notifications.map((n) => n.id)).not.toContain(mine.notification.id);
  });

  it('answers 404 for an unknown user and 400 for an id that is not one', async () => {
    const res = await get(`nobody-${randomUUID()}`);
    expect(res.status).toBe(404);
    expect((await errorOf(res)).error.code).toBe('not_found');
    const bad = await get('x'.repeat(1000));
    expect(bad.status).toBe(400);
    expect((await errorOf(bad)).error.code).toBe('invalid_argument');
  });

  it('round-trips a user id with emoji, CJK and right-to-left text', async () => {
    const id = `ユーザー-😀-משתמש-${randomUUID().slice(0, 8)}`;
    await addUser(id);
    const res = await get(id);
    expect(res.status).toBe(200);
    expect(((await res.json()) as UserJson).user_id).toBe(id);
    const erased = await erase(id, { confirm: id });
    expect(erased.status).toBe(200);
    expect(await erased.json()).toEqual({ erased: true, user_id: id });
    expect((await get(id)).status).toBe(404);
  });
});

describe('console users: erase', () => {
  it('refuses without the exact id typed again, and erases nothing', async () => {
    const id = `keep-${randomUUID()}`;
    await addUser(id);
    for (const body of [
      {},
      { confirm: '' },
      { confirm: id.toUpperCase() },
      { confirm: `${id} ` },
      { confirm: 1 },
    ]) {
      const res = await erase(id, body);
      expect(res.status).toBe(400);
      const err = (await errorOf(res)).error;
      expect(err.code).toBe('invalid_argument');
      expect(err.message).toMatch(/confirm/);
    }
    const notJson = await erase(id, 'not json', 'DELETE');
    expect(notJson.status).toBe(400);
    expect((await get(id)).status).toBe(200);
  });

  it('erases everywhere (user, notifications, deliveries, inbox) with DELETE or POST .../erase', async () => {
    for (const how of ['DELETE', 'POST'] as const) {
      const id = `gone-${how}-${randomUUID()}`;
      await addUser(id);
      const { notification } = await notify(id, 'c');
      // A notification whose email waits for a provider that never answers: a queued delivery of the user.
      const news = await svc.app.notifier.notify(
        {
          userId: id,
          topic: '',
          category: 'news',
          data: {},
          overrides: [],
          priority: 'normal',
          idempotencyKey: randomUUID(),
        },
        'c',
      );
      const deliveryId = news.notification.channels.find((c) => c.channel === 'email')?.messageId;
      expect(deliveryId).toEqual(expect.any(String));
      await svc.app.inbox.send({ userId: id, title: 'Hello', body: 'there' });
      const res = await erase(id, { confirm: id }, how);
      expect(res.status).toBe(200);
      expect((await get(id)).status).toBe(404);
      await expect(svc.app.users.findUser(id)).resolves.toBeUndefined();
      await expect(svc.app.notifier.get(notification.id, 'c')).rejects.toMatchObject({ code: 'NOT_FOUND' });
      expect(await svc.app.notifier.recentOfUser(id, 10)).toEqual([]);
      // The delivery keeps its id and status, ended before it could go, without the address.
      const after = await svc.app.deliveries.get(deliveryId!);
      expect(after.status).toBe('failed');
      expect(after.lastError).toBe(USER_DELETED_ERROR);
      expect(JSON.stringify(after)).not.toContain('jane.doe@example.com');
      expect(await svc.app.inbox.countUnread(id)).toBe(0);
      // Erasing again: the user is gone.
      expect((await erase(id, { confirm: id }, how)).status).toBe(404);
    }
  });
});
