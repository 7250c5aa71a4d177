/**
 * Who may use the operator console: every API route of the console (those of every section, read
 * from the service's route table, so a new section is covered without being listed here) answers 401
 * without a token, 403 to an end user's token, and serves an operator. The page shell is public.
 */
import {
  CONSOLE_API_PATH,
  CONSOLE_PATH,
} from '../../../../services/notification/admin/console/console-gateway';
import type { RunningNotificationApp } from '../../../support/notification-app';
import { adminAuthConfig, hsToken, operatorToken, startAdminService } from '../harness';

describe('operator console access', () => {
  let svc: RunningNotificationApp;
  let routes: { method: string; path: string }[];

  beforeAll(async () => {
    svc = await startAdminService({
      admin: { auth: adminAuthConfig({ operator_claim: 'groups', operator_roles: ['ops', 'sre'] }) },
    });
    routes = svc.app.server.routes
      .list()
      .filter((r) => r.path.startsWith(`${CONSOLE_API_PATH}/`))
      .map((r) => ({
        method: r.methods[0]!,
        // A param segment gets a value that is well-formed for no resource (the checks come first).
        path: r.path.replace(/:[a-z_]+/gi, 'x'),
      }));
  });
  afterAll(() => svc?.close());

  const call = (method: string, path: string, token?: string): Promise<Response> =>
    fetch(`${svc.baseUrl}${path}`, {
      method,
      headers: {
        ...(token ? { Authorization: `Bearer ${token}` } : {}),
        ...(method === 'GET' || method === 'HEAD' ? {} : { 'Content-Type': 'application/json' }),
      },
      ...(method === 'GET' || method === 'HEAD' ? {} : { body: '{}' }),
    });

  it('has API routes (the sections index lists at least itself)', () => {
    expect(routes.map((r) => r.path)).toContain(`${CONSOLE_API_PATH}/sections`);
  });

  it('answers 401 with a bearer challenge to every API route called without a token', async () => {
    for (const { method, path } of routes) {
      const res = await call(method, path);
      expect({ path, status: res.status }).toEqual({ path, status: 401 });
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="console"/);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthenticated');
    }
  });

  it("answers 403 to every API route called with an end user's token, before reading a body", async () => {
    const user = await hsToken('jane', { claims: { groups: ['users'], roles: ['notification:operator'] } });
    for (const { method, path } of routes) {
      const res = await call(method, path, user);
      expect({ path, status: res.status }).toEqual({ path, status: 403 });
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('permission_denied');
    }
  });

  it('serves an operator named by the configured claim (an array, or space-separated values)', async () => {
    for (const groups of [['users', 'sre'], 'users ops']) {
      const token = await operatorToken('ops-ann', { claims: { groups } });
      const res = await call('GET', `${CONSOLE_API_PATH}/sections`, token);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { operator: string }).operator).toBe('ops-ann');
    }
    for (const { method, path } of routes) {
      const token = await operatorToken('ops-ann', { claims: { groups: ['ops'] } });
      const res = await call(method, path, token);
      expect({ path, status: [401, 403].includes(res.status) }).toEqual({ path, status: false });
      await res.arrayBuffer();
    }
  });

  it('refuses an operator token that is forged or expired (401)', async () => {
    const forged = await operatorToken('ops-ann', { secret: 'another-secret-another-secret-0123456789' });
    const expired = await operatorToken('ops-ann', { exp: Math.floor(Date.now() / 1000) - 3600 });
    for (const token of [forged, expired]) {
      expect((await call('GET', `${CONSOLE_API_PATH}/sections`, token)).status).toBe(401);
    }
  });

  it('serves the page shell to anyone (it holds no data), with the security headers', async () => {
    const res = await fetch(`${svc.baseUrl}${CONSOLE_PATH}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await res.text();
    for (const script of html.match(/src="[^"]+"/g) ?? []) {
      const src = script.slice(5, -1);
      const asset = await fetch(`${svc.baseUrl}${src}`);
      expect({ src, status: asset.status }).toEqual({ src, status: 200 });
      await asset.arrayBuffer();
    }
  });
});
