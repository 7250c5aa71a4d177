import { createServer, type Server } from 'node:http';
import { HttpRouteTable } from '../../../shared/http/routes';
import type { AddressInfo } from 'node:net';
import { AdminGateway } from '../../../services/notification/admin/gateway';
import { CONTENT_SECURITY_POLICY, SECURITY_HEADERS } from '../../../services/notification/admin/http';
import { loadJose, type Jose } from '../../../services/notification/admin/jose';
import type { InboxServiceContract } from '../../../services/notification/inbox/types';
import { silentLogger } from '../../../shared/logging/logger';
import type { RunningNotificationApp } from '../../support/notification-app';
import {
  adminAuthConfig,
  authed,
  AUDIENCE,
  errorOf,
  hsToken,
  inboxOf,
  ISSUER,
  sendOverGrpc,
  startAdminService,
} from './harness';

const INBOX = '/admin/notifications/inbox';

type KeyPair = Awaited<ReturnType<Jose['generateKeyPair']>>;

describe('admin gateway over HTTP', () => {
  let svc: RunningNotificationApp;
  let alice: string;

  beforeAll(async () => {
    svc = await startAdminService({ inbox: { max_page_size: 5 } });
    alice = await hsToken('alice');
  });
  afterAll(() => svc.close());

  /** Sends `n` messages over gRPC, one per millisecond; returns their ids, oldest first. */
  async function sendTo(userId: string, n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i += 1) {
      ids.push((await sendOverGrpc(svc, userId, `t${i}`, `b${i}`, { i })).id);
    }
    return ids;
  }

  describe('authentication', () => {
    it('when no token is sent, the inbox answers 401 with a bare Bearer challenge', async () => {
      const res = await fetch(svc.baseUrl + INBOX);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="admin"');
      expect(await res.json()).toEqual({ error: { code: 'unauthenticated', message: expect.any(String) } });
    });

    it('when the token is signed with another key, the request is 401 invalid_token', async () => {
      const forged = await hsToken('alice', { secret: 'another-secret-that-is-32-bytes-long!!' });
      const res = await fetch(svc.baseUrl + INBOX, authed(forged));
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="admin", error="invalid_token"');
    });

    it('when the token expired beyond the clock skew, the request is 401', async () => {
      const expired = await hsToken('alice', { exp: Math.floor(Date.now() / 1000) - 120 });
      const res = await fetch(svc.baseUrl + INBOX, authed(expired));
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
      expect((await errorOf(res)).error.message).toBe('the token has expired');
    });

    it('when the token is for another audience, the request is 401', async () => {
      const res = await fetch(svc.baseUrl + INBOX, authed(await hsToken('alice', { audience: 'billing' })));
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toContain('Bearer');
    });

    it('when the token comes from another issuer, the request is 401', async () => {
      const res = await fetch(
        svc.baseUrl + INBOX,
        authed(await hsToken('alice', { issuer: `${ISSUER}/evil` })),
      );
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toContain('Bearer');
    });

    it('when the token has no subject, the request is 401', async () => {
      const res = await fetch(svc.baseUrl + INBOX, authed(await hsToken('x', { sub: null })));
      expect(res.status).toBe(401);
    });

    it('when the token is sent as a cookie instead of the header, the state-changing route is 401', async () => {
      const res = await fetch(svc.baseUrl + '/admin/notifications/read-all', {
        method: 'POST',
        headers: { Cookie: `token=${alice}; authorization=Bearer%20${alice}` },
      });
      expect(res.status).toBe(401);
    });
  });

  describe('GET /admin/notifications/inbox', () => {
    it('returns the unread count and the messages newest first with the documented fields', async () => {
      const token = await hsToken('inbox-shape');
      const [first, second] = await sendTo('inbox-shape', 2);
      const res = await fetch(svc.baseUrl + INBOX, authed(token));
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-store');
      const body = await inboxOf(res);
      expect(body.unread_count).toBe(2);
      expect(body.next_cursor).toBeNull();
      expect(body.notifications.map((n) => n.id)).toEqual([second, first]);
      expect(body.notifications[0]).toEqual({
        id: second,
        title: 't1',
        body: 'b1',
        read: false,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        metadata: { i: 1 },
      });
    });

    it('pages with limit and the returned cursor until next_cursor is null', async () => {
      const token = await hsToken('pager');
      const ids = (await sendTo('pager', 5)).reverse();
      const page1 = await inboxOf(await fetch(`${svc.baseUrl}${INBOX}?limit=2`, authed(token)));
      const page2 = await inboxOf(
        await fetch(
          `${svc.baseUrl}${INBOX}?limit=2&cursor=${encodeURIComponent(page1.next_cursor!)}`,
          authed(token),
        ),
      );
      const page3 = await inboxOf(
        await fetch(
          `${svc.baseUrl}${INBOX}?limit=2&cursor=${encodeURIComponent(page2.next_cursor!)}`,
          authed(token),
        ),
      );
      const seen = [page1, page2, page3].flatMap((p) => p.notifications.map((n) => n.id));
      expect(seen).toEqual(ids);
      expect(page3.next_cursor).toBeNull();
    });

    it.each(['0', '6', '-1', '2.5', 'abc', ''])('when limit is %p, the request is 400', async (limit) => {
      const res = await fetch(`${svc.baseUrl}${INBOX}?limit=${limit}`, authed(alice));
      expect(res.status).toBe(400);
      expect((await errorOf(res)).error.code).toBe('invalid_argument');
    });

    it('accepts limit equal to max_page_size', async () => {
      const res = await fetch(`${svc.baseUrl}${INBOX}?limit=5`, authed(alice));
      expect(res.status).toBe(200);
    });

    it('when the cursor is malformed, the request is 400', async () => {
      const res = await fetch(`${svc.baseUrl}${INBOX}?cursor=not-a-cursor`, authed(alice));
      expect(res.status).toBe(400);
      expect((await errorOf(res)).error.code).toBe('invalid_argument');
    });

    it('only shows the messages of the token subject', async () => {
      await sendTo('someone-else', 1);
      const token = await hsToken('lonely');
      const body = await inboxOf(await fetch(svc.baseUrl + INBOX, authed(token)));
      expect(body).toEqual({ unread_count: 0, notifications: [], next_cursor: null });
    });
  });

  describe('POST /admin/notifications/read/{message_id}', () => {
    it('marks the message read and returns the new unread count', async () => {
      const token = await hsToken('reader');
      const [id] = await sendTo('reader', 2);
      const res = await fetch(
        `${svc.baseUrl}/admin/notifications/read/${id}`,
        authed(token, { method: 'POST' }),
      );
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ ok: true, unread_count: 1 });
      const page = await svc.app.inbox.getInbox('reader');
      expect(page.messages.find((m) => m.id === id)?.readAt).not.toBeNull();
    });

    it("when the id is another user's, answers 404 with the same body as an unknown id and changes nothing", async () => {
      const [foreign] = await sendTo('victim', 1);
      const thief = await hsToken('thief');
      const res = await fetch(
        `${svc.baseUrl}/admin/notifications/read/${foreign}`,
        authed(thief, { method: 'POST' }),
      );
      const unknown = await fetch(
        `${svc.baseUrl}/admin/notifications/read/00000000-0000-4000-8000-000000000000`,
        authed(thief, { method: 'POST' }),
      );
      expect(res.status).toBe(404);
      expect(unknown.status).toBe(404);
      expect(await res.text()).toBe(await unknown.text());
      expect(await svc.app.inbox.countUnread('victim')).toBe(1);
    });

    it('when the id is not a UUID, answers 400', async () => {
      const res = await fetch(
        `${svc.baseUrl}/admin/notifications/read/12345`,
        authed(alice, { method: 'POST' }),
      );
      expect(res.status).toBe(400);
      expect((await errorOf(res)).error).toEqual({
        code: 'invalid_argument',
        message: 'message_id must be a UUID',
      });
    });

    it('when called with GET, answers 405 with Allow: POST', async () => {
      const res = await fetch(`${svc.baseUrl}/admin/notifications/read/00000000-0000-4000-8000-000000000000`);
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
    });
  });

  describe('POST /admin/notifications/read-all', () => {
    it('marks every message of the user read and reports how many changed', async () => {
      const token = await hsToken('bulk');
      await sendTo('bulk', 3);
      await sendTo('bystander', 1);
      const res = await fetch(
        `${svc.baseUrl}/admin/notifications/read-all`,
        authed(token, { method: 'POST' }),
      );
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ ok: true, updated: 3, unread_count: 0 });
      expect(await svc.app.inbox.countUnread('bulk')).toBe(0);
      expect(await svc.app.inbox.countUnread('bystander')).toBe(1);
    });

    it('when called with GET, answers 405 with Allow: POST', async () => {
      const res = await fetch(`${svc.baseUrl}/admin/notifications/read-all`, authed(alice));
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
    });
  });

  describe('routing and headers', () => {
    it('answers 404 JSON for an unknown admin path', async () => {
      const res = await fetch(`${svc.baseUrl}/admin/nothing-here`);
      expect(res.status).toBe(404);
      expect((await errorOf(res)).error.code).toBe('not_found');
    });

    it('leaves paths outside /admin/ to the rest of the service', async () => {
      const res = await fetch(`${svc.baseUrl}/health`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-security-policy')).toBeNull();
      expect(await res.json()).toMatchObject({ status: expect.any(String) });
    });

    it('answers 405 with Allow for POST on the inbox', async () => {
      const res = await fetch(svc.baseUrl + INBOX, authed(alice, { method: 'POST' }));
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('GET');
    });

    it.each([
      ['a 401', INBOX, {}],
      ['a 404', '/admin/unknown', {}],
      ['a 405', INBOX, { method: 'DELETE' }],
      ['the page', '/admin/notifications', {}],
    ])('sends the security headers on %s', async (_name, path, init) => {
      const res = await fetch(svc.baseUrl + path, init);
      expect(res.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    });
  });
});

describe('admin gateway failures', () => {
  // A double is the only way to make the memory store fail; everything around it is real.
  it('when the inbox fails unexpectedly, answers a generic 500 without the cause', async () => {
    const svc = await startAdminService();
    const real = svc.app.inbox;
    const failing: InboxServiceContract = Object.assign(Object.create(real) as InboxServiceContract, {
      getInbox: (): Promise<never> =>
        Promise.reject(new Error('connect ECONNREFUSED postgres://admin:hunter2@db/inbox')),
    });
    const gateway = new AdminGateway({
      inbox: failing,
      auth: svc.app.auth,
      logger: silentLogger(),
      maxPageSize: 50,
    });
    const table = new HttpRouteTable().add(...gateway.routes()).setHeaders('/admin/', SECURITY_HEADERS);
    const server = createServer((req, res) => void table.dispatch(req, res, silentLogger()));
    try {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as AddressInfo;
      const res = await fetch(`http://127.0.0.1:${port}${INBOX}`, authed(await hsToken('alice')));
      expect(res.status).toBe(500);
      const text = await res.text();
      expect(JSON.parse(text)).toEqual({ error: { code: 'internal', message: 'internal error' } });
      expect(text).not.toContain('hunter2');
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await svc.close();
    }
  });
});

describe('a service whose admin auth is a JWKS URL', () => {
  let jose: Jose;
  let keyServer: Server;
  let svc: RunningNotificationApp;
  let signer: KeyPair;
  let stranger: KeyPair;

  beforeAll(async () => {
    jose = await loadJose();
    signer = await jose.generateKeyPair('RS256');
    stranger = await jose.generateKeyPair('RS256');
    const jwks = {
      keys: [{ ...(await jose.exportJWK(signer.publicKey)), kid: 'rsa-1', alg: 'RS256', use: 'sig' }],
    };
    keyServer = createServer((req, res) => {
      if (req.url === '/.well-known/jwks.json') {
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(jwks));
      } else {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => keyServer.listen(0, '127.0.0.1', resolve));
    const { port } = keyServer.address() as AddressInfo;
    svc = await startAdminService({
      admin: {
        auth: adminAuthConfig({
          jwt_secret: undefined,
          jwks_url: `http://127.0.0.1:${port}/.well-known/jwks.json`,
        }),
      },
    });
    await sendOverGrpc(svc, 'carol', 'Signed in with RS256', 'hello');
  });
  afterAll(async () => {
    await svc?.close();
    keyServer.closeAllConnections();
    await new Promise<void>((resolve) => keyServer.close(() => resolve()));
  });

  async function rsToken(key: KeyPair['privateKey']): Promise<string> {
    return new jose.SignJWT({})
      .setProtectedHeader({ alg: 'RS256', kid: 'rsa-1' })
      .setSubject('carol')
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setExpirationTime('5m')
      .sign(key);
  }

  it("accepts an RS256 token signed by the key of the set and answers that user's inbox", async () => {
    const res = await fetch(svc.baseUrl + INBOX, authed(await rsToken(signer.privateKey)));
    expect(res.status).toBe(200);
    const body = await inboxOf(res);
    expect(body.unread_count).toBe(1);
    expect(body.notifications.map((n) => n.title)).toEqual(['Signed in with RS256']);
  });

  it('rejects an RS256 token signed by another key with the same kid as 401 invalid_token', async () => {
    const res = await fetch(svc.baseUrl + INBOX, authed(await rsToken(stranger.privateKey)));
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="admin", error="invalid_token"');
    expect((await errorOf(res)).error.code).toBe('unauthenticated');
  });

  it('rejects an HS256 token when only the JWKS is configured', async () => {
    const res = await fetch(svc.baseUrl + INBOX, authed(await hsToken('carol')));
    expect(res.status).toBe(401);
  });
});
