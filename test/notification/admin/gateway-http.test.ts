import { CONTENT_SECURITY_POLICY } from '../../../services/notification/admin/http';
import { FakeInbox } from './fake-inbox';
import { authed, errorOf, hsToken, inboxOf, ISSUER, startGateway, type RunningGateway } from './harness';

const INBOX = '/admin/notifications/inbox';

describe('admin gateway over HTTP', () => {
  let gw: RunningGateway;
  let alice: string;

  beforeAll(async () => {
    gw = await startGateway({ maxPageSize: 5 });
    alice = await hsToken('alice');
  });
  afterAll(() => gw.close());

  async function sendTo(userId: string, n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i += 1) {
      ids.push((await gw.inbox.send({ userId, title: `t${i}`, body: `b${i}`, metadata: { i } })).id);
    }
    return ids;
  }

  describe('authentication', () => {
    it('when no token is sent, the inbox answers 401 with a bare Bearer challenge', async () => {
      const res = await fetch(gw.baseUrl + INBOX);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="admin"');
      expect(await res.json()).toEqual({ error: { code: 'UNAUTHENTICATED', message: expect.any(String) } });
    });

    it('when the token is signed with another key, the request is 401 invalid_token', async () => {
      const forged = await hsToken('alice', { secret: 'another-secret-that-is-32-bytes-long!!' });
      const res = await fetch(gw.baseUrl + INBOX, authed(forged));
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="admin", error="invalid_token"');
    });

    it('when the token expired beyond the clock skew, the request is 401', async () => {
      const expired = await hsToken('alice', { exp: Math.floor(Date.now() / 1000) - 120 });
      const res = await fetch(gw.baseUrl + INBOX, authed(expired));
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
      expect((await errorOf(res)).error.message).toBe('the token has expired');
    });

    it('when the token is for another audience, the request is 401', async () => {
      const res = await fetch(gw.baseUrl + INBOX, authed(await hsToken('alice', { audience: 'billing' })));
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toContain('Bearer');
    });

    it('when the token comes from another issuer, the request is 401', async () => {
      const res = await fetch(
        gw.baseUrl + INBOX,
        authed(await hsToken('alice', { issuer: `${ISSUER}/evil` })),
      );
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toContain('Bearer');
    });

    it('when the token has no subject, the request is 401', async () => {
      const res = await fetch(gw.baseUrl + INBOX, authed(await hsToken('x', { sub: null })));
      expect(res.status).toBe(401);
    });

    it('when the token is sent as a cookie instead of the header, the state-changing route is 401', async () => {
      const res = await fetch(gw.baseUrl + '/admin/notifications/read-all', {
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
      const res = await fetch(gw.baseUrl + INBOX, authed(token));
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
      const page1 = await inboxOf(await fetch(`${gw.baseUrl}${INBOX}?limit=2`, authed(token)));
      const page2 = await inboxOf(
        await fetch(
          `${gw.baseUrl}${INBOX}?limit=2&cursor=${encodeURIComponent(page1.next_cursor!)}`,
          authed(token),
        ),
      );
      const page3 = await inboxOf(
        await fetch(
          `${gw.baseUrl}${INBOX}?limit=2&cursor=${encodeURIComponent(page2.next_cursor!)}`,
          authed(token),
        ),
      );
      const seen = [page1, page2, page3].flatMap((p) => p.notifications.map((n) => n.id));
      expect(seen).toEqual(ids);
      expect(page3.next_cursor).toBeNull();
    });

    it.each(['0', '6', '-1', '2.5', 'abc', ''])('when limit is %p, the request is 400', async (limit) => {
      const res = await fetch(`${gw.baseUrl}${INBOX}?limit=${limit}`, authed(alice));
      expect(res.status).toBe(400);
      expect((await errorOf(res)).error.code).toBe('INVALID_ARGUMENT');
    });

    it('accepts limit equal to max_page_size', async () => {
      const res = await fetch(`${gw.baseUrl}${INBOX}?limit=5`, authed(alice));
      expect(res.status).toBe(200);
    });

    it('when the cursor is malformed, the request is 400', async () => {
      const res = await fetch(`${gw.baseUrl}${INBOX}?cursor=not-a-cursor`, authed(alice));
      expect(res.status).toBe(400);
      expect((await errorOf(res)).error.code).toBe('INVALID_ARGUMENT');
    });

    it('only shows the messages of the token subject', async () => {
      await sendTo('someone-else', 1);
      const token = await hsToken('lonely');
      const body = await inboxOf(await fetch(gw.baseUrl + INBOX, authed(token)));
      expect(body).toEqual({ unread_count: 0, notifications: [], next_cursor: null });
    });
  });

  describe('POST /admin/notifications/read/{message_id}', () => {
    it('marks the message read and returns the new unread count', async () => {
      const token = await hsToken('reader');
      const [id] = await sendTo('reader', 2);
      const res = await fetch(
        `${gw.baseUrl}/admin/notifications/read/${id}`,
        authed(token, { method: 'POST' }),
      );
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ ok: true, unread_count: 1 });
      const page = await gw.inbox.getInbox('reader');
      expect(page.messages.find((m) => m.id === id)?.readAt).not.toBeNull();
    });

    it("when the id is another user's, answers 404 with the same body as an unknown id and changes nothing", async () => {
      const [foreign] = await sendTo('victim', 1);
      const thief = await hsToken('thief');
      const res = await fetch(
        `${gw.baseUrl}/admin/notifications/read/${foreign}`,
        authed(thief, { method: 'POST' }),
      );
      const unknown = await fetch(
        `${gw.baseUrl}/admin/notifications/read/00000000-0000-4000-8000-000000000000`,
        authed(thief, { method: 'POST' }),
      );
      expect(res.status).toBe(404);
      expect(unknown.status).toBe(404);
      expect(await res.text()).toBe(await unknown.text());
      expect(await gw.inbox.countUnread('victim')).toBe(1);
    });

    it('when the id is not a UUID, answers 400', async () => {
      const res = await fetch(
        `${gw.baseUrl}/admin/notifications/read/12345`,
        authed(alice, { method: 'POST' }),
      );
      expect(res.status).toBe(400);
      expect((await errorOf(res)).error).toEqual({
        code: 'INVALID_ARGUMENT',
        message: 'message_id must be a UUID',
      });
    });

    it('when called with GET, answers 405 with Allow: POST', async () => {
      const res = await fetch(`${gw.baseUrl}/admin/notifications/read/00000000-0000-4000-8000-000000000000`);
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
        `${gw.baseUrl}/admin/notifications/read-all`,
        authed(token, { method: 'POST' }),
      );
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ ok: true, updated: 3, unread_count: 0 });
      expect(await gw.inbox.countUnread('bulk')).toBe(0);
      expect(await gw.inbox.countUnread('bystander')).toBe(1);
    });

    it('when called with GET, answers 405 with Allow: POST', async () => {
      const res = await fetch(`${gw.baseUrl}/admin/notifications/read-all`, authed(alice));
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
    });
  });

  describe('routing and headers', () => {
    it('answers 404 JSON for an unknown admin path', async () => {
      const res = await fetch(`${gw.baseUrl}/admin/nothing-here`);
      expect(res.status).toBe(404);
      expect((await errorOf(res)).error.code).toBe('NOT_FOUND');
    });

    it('leaves paths outside /admin/ to the next handler', async () => {
      const res = await fetch(`${gw.baseUrl}/health`);
      expect(res.status).toBe(418);
      expect(gw.fallbackHits).toContain('/health');
    });

    it('answers 405 with Allow for POST on the inbox', async () => {
      const res = await fetch(gw.baseUrl + INBOX, authed(alice, { method: 'POST' }));
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('GET');
    });

    it.each([
      ['a 401', INBOX, {}],
      ['a 404', '/admin/unknown', {}],
      ['a 405', INBOX, { method: 'DELETE' }],
      ['the page', '/admin/notifications', {}],
    ])('sends the security headers on %s', async (_name, path, init) => {
      const res = await fetch(gw.baseUrl + path, init);
      expect(res.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    });
  });
});

describe('admin gateway failures', () => {
  it('when the inbox fails unexpectedly, answers a generic 500 without the cause', async () => {
    class BrokenInbox extends FakeInbox {
      override async getInbox(): Promise<never> {
        throw new Error('connect ECONNREFUSED postgres://admin:hunter2@db/inbox');
      }
    }
    const gw = await startGateway({ inbox: new BrokenInbox() });
    try {
      const res = await fetch(gw.baseUrl + INBOX, authed(await hsToken('alice')));
      expect(res.status).toBe(500);
      const text = await res.text();
      expect(JSON.parse(text)).toEqual({ error: { code: 'INTERNAL', message: 'internal error' } });
      expect(text).not.toContain('hunter2');
    } finally {
      await gw.close();
    }
  });
});
