/**
 * GET and PUT /admin/notifications/preferences on the real notification service: the current user's
 * (the JWT subject's) preferences, under the inbox routes' auth rules and the one JSON error body.
 */
import {
  MAX_PREFERENCES_BODY_BYTES,
  type AdminPreferencesJson,
} from '../../../services/notification/admin/gateway';
import { CONTENT_SECURITY_POLICY } from '../../../services/notification/admin/http';
import type { RunningNotificationApp } from '../../support/notification-app';
import { authed, errorOf, hsToken, startAdminService } from './harness';

const PATH = '/admin/notifications/preferences';

let svc: RunningNotificationApp;

beforeAll(async () => {
  svc = await startAdminService({
    notify: {
      categories: [
        {
          name: 'security',
          channels: ['inbox', 'email'],
          required: true,
          description: 'Sign-ins and passwords',
        },
        {
          name: 'comments',
          channels: ['inbox', 'email', 'push'],
          defaults: { push: false },
          description: '评论 · تعليقات 💬',
        },
      ],
    },
  });
});
afterAll(() => svc.close());

async function put(token: string, body: unknown, raw?: string): Promise<Response> {
  return fetch(
    svc.baseUrl + PATH,
    authed(token, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/json' },
      body: raw ?? JSON.stringify(body),
    }),
  );
}

describe('admin preferences routes', () => {
  it('when no token or a bad one is sent, GET and PUT answer 401 and nothing changes', async () => {
    const none = await fetch(svc.baseUrl + PATH);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="admin"');
    const forged = await hsToken('alice', { secret: 'another-secret-that-is-32-bytes-long!!' });
    const res = await put(forged, {
      preferences: [{ category: 'comments', channel: 'email', enabled: false }],
    });
    expect(res.status).toBe(401);
    expect((await errorOf(res)).error.code).toBe('unauthenticated');
    const after = (await (
      await fetch(svc.baseUrl + PATH, authed(await hsToken('alice')))
    ).json()) as AdminPreferencesJson;
    expect(after.categories[1]!.channels[1]).toEqual({ channel: 'email', enabled: true, chosen: false });
  });

  it("GET answers the subject's categories with descriptions, required flags and channel defaults", async () => {
    const res = await fetch(svc.baseUrl + PATH, authed(await hsToken('gina')));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY);
    expect(await res.json()).toEqual({
      categories: [
        {
          name: 'security',
          description: 'Sign-ins and passwords',
          required: true,
          channels: [
            { channel: 'inbox', enabled: true, chosen: false },
            { channel: 'email', enabled: true, chosen: false },
          ],
        },
        {
          name: 'comments',
          description: '评论 · تعليقات 💬',
          required: false,
          channels: [
            { channel: 'inbox', enabled: true, chosen: false },
            { channel: 'email', enabled: true, chosen: false },
            { channel: 'push', enabled: false, chosen: false },
          ],
        },
      ],
    });
  });

  it("PUT records the subject's choices, answers the effective set, and another user is untouched", async () => {
    const harry = await hsToken('harry');
    const res = await put(harry, {
      preferences: [
        { category: 'comments', channel: 'email', enabled: false },
        { category: 'comments', channel: 'push', enabled: true },
      ],
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as AdminPreferencesJson;
    expect(body.categories[1]!.channels).toEqual([
      { channel: 'inbox', enabled: true, chosen: false },
      { channel: 'email', enabled: false, chosen: true },
      { channel: 'push', enabled: true, chosen: true },
    ]);
    expect(await (await fetch(svc.baseUrl + PATH, authed(harry))).json()).toEqual(body);
    const other = (await (
      await fetch(svc.baseUrl + PATH, authed(await hsToken('ivy')))
    ).json()) as AdminPreferencesJson;
    expect(other.categories[1]!.channels.every((c) => !c.chosen)).toBe(true);
  });

  it('PUT turning a required category off is 400 invalid_argument naming it, and records nothing', async () => {
    const jack = await hsToken('jack');
    const res = await put(jack, {
      preferences: [
        { category: 'comments', channel: 'email', enabled: false },
        { category: 'security', channel: 'email', enabled: false },
      ],
    });
    expect(res.status).toBe(400);
    const { error } = await errorOf(res);
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toMatch(/"security" is required/);
    const after = (await (await fetch(svc.baseUrl + PATH, authed(jack))).json()) as AdminPreferencesJson;
    expect(after.categories[1]!.channels[1]).toEqual({ channel: 'email', enabled: true, chosen: false });
  });

  it('PUT with an unknown category is 400 listing the configured ones', async () => {
    const res = await put(await hsToken('kim'), {
      preferences: [{ category: 'promos', channel: 'email', enabled: false }],
    });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).error.message).toMatch(/configured: security, comments/);
  });

  it('PUT with bad JSON or a wrong shape is 400 with a clear message', async () => {
    const token = await hsToken('lee');
    const bad = await put(token, undefined, '{"preferences": [');
    expect(bad.status).toBe(400);
    expect(await errorOf(bad)).toEqual({
      error: { code: 'invalid_argument', message: 'the body is not valid JSON' },
    });
    for (const body of [
      [],
      { preferences: 'x' },
      { preferences: [{ category: 'comments', channel: 'email', enabled: 'no' }] },
      null,
    ]) {
      const res = await put(token, body);
      expect(res.status).toBe(400);
      expect((await errorOf(res)).error.message).toMatch(/preferences/);
    }
  });

  it('PUT with a body of exactly the bound is read; one byte more is 413', async () => {
    const token = await hsToken('olga');
    const padded = (n: number): string => {
      const head = '{"preferences":[{"category":"comments","channel":"push","enabled":true}],"pad":"';
      return head + 'x'.repeat(n - head.length - 2) + '"}';
    };
    expect(Buffer.byteLength(padded(MAX_PREFERENCES_BODY_BYTES))).toBe(MAX_PREFERENCES_BODY_BYTES);
    expect((await put(token, undefined, padded(MAX_PREFERENCES_BODY_BYTES + 1))).status).toBe(413);
    const at = await put(token, undefined, padded(MAX_PREFERENCES_BODY_BYTES));
    expect(at.status).toBe(200);
  });

  it('PUT with a body over the bound is 413', async () => {
    const res = await put(
      await hsToken('max'),
      undefined,
      JSON.stringify({ preferences: [], pad: 'x'.repeat(17 * 1024) }),
    );
    expect(res.status).toBe(413);
    expect((await errorOf(res)).error.code).toBe('resource_exhausted');
  });

  it('POST is 405 with Allow naming GET and PUT', async () => {
    const res = await fetch(svc.baseUrl + PATH, authed(await hsToken('ned'), { method: 'POST' }));
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, PUT');
  });
});
