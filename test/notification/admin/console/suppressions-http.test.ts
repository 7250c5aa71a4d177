/**
 * The console's suppressions API: add, list, search and remove through the Suppressions domain object
 * (the list AddSuppression / RemoveSuppression / ListSuppressions use), recipients masked in every
 * answer, the operator's reason bounded on code points, bad input 400, an unknown entry 404.
 */
import { CONSOLE_API_PATH } from '../../../../services/notification/admin/console/console-gateway';
import { MAX_NOTE_POINTS } from '../../../../services/notification/admin/console/sections/suppressions';
import type { RunningNotificationApp } from '../../../support/notification-app';
import { textLength, wellFormed } from '../../../../shared/text/cut';
import { authed, operatorToken, startAdminService, until } from '../harness';

interface Item {
  id: string | null;
  channel: string;
  recipient: string;
  kind: string;
  source: string | null;
  created_at: string | null;
}
interface ErrorJson {
  error: { code: string; message: string };
}

let svc: RunningNotificationApp;
let token: string;

beforeAll(async () => {
  svc = await startAdminService();
  token = await operatorToken('ops-ann');
});
afterAll(() => svc?.close());

const url = (path: string): string => `${svc.baseUrl}${CONSOLE_API_PATH}/${path}`;
const post = (path: string, body: unknown): Promise<Response> =>
  fetch(
    url(path),
    authed(token, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    }),
  );
const get = async (path: string): Promise<{ status: number; body: unknown }> => {
  const res = await fetch(url(path), authed(token));
  return { status: res.status, body: await res.json() };
};

describe('console suppressions API', () => {
  it('adds an entry (201, masked), answers 200 with created false the second time, and the domain sees it', async () => {
    const res = await post('suppressions', {
      channel: 'email',
      recipient: ' Jane.Doe@Example.COM ',
      reason: 'asked by phone 📞 通话 طلب',
    });
    expect(res.status).toBe(201);
    const added = (await res.json()) as { item: Item; created: boolean };
    expect(added.created).toBe(true);
    expect(added.item).toMatchObject({ channel: 'email', recipient: 'j***@example.com', kind: 'manual' });
    expect(added.item.source).toBe('api:console:ops-ann: asked by phone 📞 通话 طلب');
    expect(JSON.stringify(added)).not.toContain('jane.doe');
    expect(await svc.app.suppressions.isSuppressed('email', 'jane.doe@example.com')).toBe(true);

    const again = await post('suppressions', {
      channel: 'email',
      recipient: 'jane.doe@example.com',
      reason: 'x',
    });
    expect(again.status).toBe(200);
    expect(((await again.json()) as { created: boolean }).created).toBe(false);
  });

  it('lists newest first, by channel, paged by cursor, recipients masked', async () => {
    for (const n of ['+15550001001', '+15550001002', '+15550001003']) {
      expect(
        (await post('suppressions', { channel: 'sms', recipient: n, reason: 'test', kind: 'unsubscribed' }))
          .status,
      ).toBe(201);
      // The next entry strictly newer (within one millisecond the list orders by id).
      const addedAt = Date.now();
      await until(() => Date.now() > addedAt);
    }
    const first = await get('suppressions?channel=sms&limit=2');
    expect(first.status).toBe(200);
    const page1 = first.body as { items: Item[]; next_cursor: string | null };
    expect(page1.items.map((i) => i.recipient)).toEqual(['+1555****003', '+1555****002']);
    expect(page1.items[0]!.kind).toBe('unsubscribed');
    expect(page1.items[0]!.created_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(page1.next_cursor).toEqual(expect.any(String));
    const second = await get(
      `suppressions?channel=sms&limit=2&cursor=${encodeURIComponent(page1.next_cursor!)}`,
    );
    const page2 = second.body as { items: Item[]; next_cursor: string | null };
    expect(page2.items.map((i) => i.recipient)).toEqual(['+1555****001']);
    expect(page2.next_cursor).toBeNull();
    // Another channel's entries are not in this channel's list.
    expect(page1.items.concat(page2.items).every((i) => i.channel === 'sms')).toBe(true);
    const all = (await get('suppressions')).body as { items: Item[] };
    expect(all.items.map((i) => i.channel)).toContain('email');
  });

  it('searches by the exact normalised recipient and answers it masked', async () => {
    const found = (await get(`suppressions?q=${encodeURIComponent('JANE.DOE@example.com')}`)).body as {
      items: Item[];
    };
    expect(found.items).toEqual([
      {
        id: null,
        channel: 'email',
        recipient: 'j***@example.com',
        kind: 'manual',
        source: null,
        created_at: null,
      },
    ]);
    const sms = (await get(`suppressions?channel=sms&q=${encodeURIComponent('+1 555 000-1002')}`)).body as {
      items: Item[];
    };
    expect(sms.items.map((i) => i.recipient)).toEqual(['+1555****002']);
    // A prefix is no match (exact search only).
    const prefix = (await get('suppressions?channel=sms&q=%2B155500010')).body as { items: Item[] };
    expect(prefix.items).toEqual([]);
    const bad = await get('suppressions?channel=sms&q=not-a-number');
    expect(bad.status).toBe(400);
    expect((bad.body as ErrorJson).error.message).toMatch(/q is not a telephone number/);
  });

  it('bounds the limit: 1 to 500, else 400', async () => {
    expect((await get('suppressions?limit=500')).status).toBe(200);
    expect((await get('suppressions?limit=501')).status).toBe(400);
    expect((await get('suppressions?limit=0')).status).toBe(400);
    expect((await get('suppressions?channel=fax')).status).toBe(400);
    expect((await get('suppressions?cursor=garbage')).status).toBe(400);
  });

  it('requires a reason of at most 200 code points (emoji count as one), printable', async () => {
    const atBound = '😀'.repeat(MAX_NOTE_POINTS);
    const ok = await post('suppressions', {
      channel: 'email',
      recipient: 'bound@example.com',
      reason: atBound,
    });
    expect(ok.status).toBe(201);
    const source = ((await ok.json()) as { item: Item }).item.source!;
    // The domain counts the source's 256 characters as code points, as the console counts the
    // reason: the 200 emoji are kept whole (in UTF-16 units they were 400, and were cut).
    expect(source.endsWith(`: ${atBound}`)).toBe(true);
    expect(textLength(source, 'code_point')).toBeLessThanOrEqual(256);
    expect(source).toBe(wellFormed(source));

    const past = await post('suppressions', {
      channel: 'email',
      recipient: 'past@example.com',
      reason: '😀'.repeat(MAX_NOTE_POINTS + 1),
    });
    expect(past.status).toBe(400);
    expect(((await past.json()) as ErrorJson).error.message).toBe('reason is longer than 200 characters');
    for (const reason of [undefined, '', '   ', 'line\nbreak', 7]) {
      const res = await post('suppressions', { channel: 'email', recipient: 'r@example.com', reason });
      expect({ reason, status: res.status }).toEqual({ reason, status: 400 });
    }
    expect(await svc.app.suppressions.isSuppressed('email', 'past@example.com')).toBe(false);
  });

  it('refuses an invalid recipient, channel, kind or body with 400 and a clear message', async () => {
    const cases: [unknown, RegExp][] = [
      [{ channel: 'email', recipient: 'not-an-address', reason: 'r' }, /recipient is not an email address/],
      [{ channel: 'sms', recipient: '5551234', reason: 'r' }, /E\.164/],
      [{ channel: 'fax', recipient: 'a@b.c', reason: 'r' }, /channel must be one of email, sms, push/],
      [{ channel: 'email', recipient: 'a@b.c', reason: 'r', kind: 'annoyed' }, /kind must be one of/],
      [{ channel: 'email', reason: 'r' }, /recipient is required/],
      // A lone surrogate (JSON's \ud800 escape) would be stored as U+FFFD, a key no send matches.
      [
        { channel: 'email', recipient: '\ud800@example.com', reason: 'r' },
        /recipient must not contain NUL characters or broken text/,
      ],
      [
        { channel: 'push', recipient: 'tok-\udc00', reason: 'r' },
        /recipient must not contain NUL characters or broken text/,
      ],
      ['{not json', /not valid JSON/],
      [[1, 2], /must be a JSON object/],
    ];
    for (const [body, message] of cases) {
      const res = await post('suppressions', body);
      expect(res.status).toBe(400);
      expect(((await res.json()) as ErrorJson).error.message).toMatch(message);
    }
  });

  it('reads a body at its bound (16 KiB) and answers 413 past it', async () => {
    const envelope = { channel: 'push', recipient: 'tok-at-the-bound-0123', reason: 'r', pad: '' };
    const pad = 'p'.repeat(16 * 1024 - Buffer.byteLength(JSON.stringify(envelope)));
    const at = JSON.stringify({ ...envelope, pad });
    expect(Buffer.byteLength(at)).toBe(16 * 1024);
    expect((await post('suppressions', at)).status).toBe(201);
    const past = await post('suppressions', JSON.stringify({ ...envelope, pad: `${pad}p` }));
    expect(past.status).toBe(413);
  });

  it('answers 413 to a body past its bound', async () => {
    const res = await post('suppressions', {
      channel: 'push',
      recipient: 'a'.repeat(17 * 1024),
      reason: 'r',
    });
    expect(res.status).toBe(413);
  });

  it('removes with a reason (the body, not the path), 404 for an unknown entry, 400 for a STOP', async () => {
    await post('suppressions', { channel: 'push', recipient: 'tok-رمز-令牌-🙂-0123456789', reason: 'dead' });
    const noReason = await post('suppressions/remove', {
      channel: 'push',
      recipient: 'tok-رمز-令牌-🙂-0123456789',
    });
    expect(noReason.status).toBe(400);
    const removed = await post('suppressions/remove', {
      channel: 'push',
      recipient: 'tok-رمز-令牌-🙂-0123456789',
      reason: 'device re-registered',
    });
    expect(removed.status).toBe(200);
    expect(await removed.json()).toEqual({ removed: true });
    expect(await svc.app.suppressions.isSuppressed('push', 'tok-رمز-令牌-🙂-0123456789')).toBe(false);

    const again = await post('suppressions/remove', {
      channel: 'push',
      recipient: 'tok-رمز-令牌-🙂-0123456789',
      reason: 'again',
    });
    expect(again.status).toBe(404);
    expect(((await again.json()) as ErrorJson).error.code).toBe('not_found');

    await svc.app.suppressions.add({
      channel: 'sms',
      recipient: '+15550009999',
      reason: 'stop_keyword',
      source: 'inbound:test',
    });
    const stop = await post('suppressions/remove', {
      channel: 'sms',
      recipient: '+15550009999',
      reason: 'please',
    });
    expect(stop.status).toBe(400);
    expect(((await stop.json()) as ErrorJson).error.code).toBe('failed_precondition');
    expect(await svc.app.suppressions.isSuppressed('sms', '+15550009999')).toBe(true);
  });
});
