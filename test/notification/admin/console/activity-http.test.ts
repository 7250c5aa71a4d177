/**
 * The console's Activity API over HTTP on the real service (memory stores, two Twilio stand-ins):
 * every delivery filter, cursor paging at the limit, bounds, bad input, masking, user isolation,
 * emoji / CJK / RTL filter values, and one message's timeline (retries, failover, receipt).
 */
import { CONSOLE_API_PATH } from '../../../../services/notification/admin/console/console-gateway';
import { FAST_DELIVERY, type RunningNotificationApp } from '../../../support/notification-app';
import { startReceiptStandIns, type ReceiptStandIns } from '../../../support/receipt-stand-ins';
import { sendStatusCallback, twilioError } from '../../channels/sms/twilio-peer';
import { operatorToken, startAdminService } from '../harness';

const PUBLIC = 'https://notify.example.com';
const MAX_PAGE = 5;
const CATEGORY = '🔔 安全 تنبيه';
const USER = 'مستخدم-用户-😀';

interface Row {
  id: string;
  channel: string;
  status: string;
  backend: string;
  recipient: string;
  user_id: string | null;
  category: string | null;
  attempts: number;
  created_at: string;
}
interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

describe('console activity API', () => {
  let standIns: ReceiptStandIns;
  let svc: RunningNotificationApp;
  let token: string;

  beforeAll(async () => {
    standIns = await startReceiptStandIns();
    svc = await startAdminService({
      delivery: {
        ...FAST_DELIVERY,
        routing: { email: 'primary', sms: 'fallback', push: 'primary' },
        circuit_breaker: { failure_threshold: 2, cooldown_seconds: 600 },
        watch: { max_watchers_per_caller: 2 },
      },
      webhooks: { public_base_url: PUBLIC },
      inbox: { max_page_size: MAX_PAGE },
      ...standIns.config,
    });
    token = await operatorToken('ops-ann');
  });
  afterAll(async () => {
    await svc?.close();
    await standIns?.close();
  });

  const get = (path: string) =>
    fetch(`${svc.baseUrl}${CONSOLE_API_PATH}/activity/${path}`, {
      headers: { Authorization: `Bearer ${token}` },
    });
  const json = async <T>(path: string): Promise<T> => {
    const res = await get(path);
    expect({ path, status: res.status }).toEqual({ path, status: 200 });
    return (await res.json()) as T;
  };
  const errorOf = async (path: string) => {
    const res = await get(path);
    return { status: res.status, ...((await res.json()) as { error: { code: string; message: string } }) };
  };

  async function waitFor<T>(read: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
    for (let i = 0; i < 1000; i++) {
      const v = await read();
      if (done(v)) return v;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error('condition never held');
  }

  const submit = (to: string, extra: { userId?: string; category?: string; scope?: string } = {}) =>
    svc.app.deliveries.submit({
      channel: 'sms',
      recipient: to,
      payload: { to, body: 'code 123456' },
      scope: extra.scope ?? 'caller-a',
      ...(extra.userId ? { userId: extra.userId } : {}),
      ...(extra.category ? { category: extra.category } : {}),
    });

  describe('deliveries', () => {
    const made: string[] = [];
    beforeAll(async () => {
      made.push((await submit('+15550100001', { userId: USER, category: CATEGORY })).delivery.id);
      made.push(
        (await submit('+15550100002', { userId: 'bob', category: CATEGORY, scope: 'caller-b' })).delivery.id,
      );
      made.push((await submit('+15550100003', { userId: USER, category: 'billing' })).delivery.id);
      made.push((await submit('+15550100001')).delivery.id);
      await waitFor(
        () => json<Page<Row>>(`deliveries?limit=${MAX_PAGE}`),
        (p) => made.every((id) => p.items.some((r) => r.id === id && r.status === 'sent')),
      );
    });
    const ids = async (query: string) =>
      (await json<Page<Row>>(`deliveries?limit=${MAX_PAGE}&${query}`)).items
        .map((r) => made.indexOf(r.id))
        .filter((i) => i >= 0);

    it('lists newest first with the row shape, recipient masked', async () => {
      const page = await json<Page<Row>>(`deliveries?user=${encodeURIComponent(USER)}`);
      expect(page.items.map((r) => r.id)).toEqual([made[2], made[0]]);
      expect(page.items[1]).toMatchObject({
        channel: 'sms',
        status: 'sent',
        backend: 'twilio-a',
        recipient: '+1555****001',
        user_id: USER,
        category: CATEGORY,
        attempts: 1,
        last_error: null,
      });
      expect(Object.keys(page.items[0]!).sort()).toEqual(
        [
          'attempts',
          'backend',
          'category',
          'channel',
          'created_at',
          'delivered_at',
          'failure',
          'id',
          'last_error',
          'recipient',
          'sent_at',
          'status',
          'updated_at',
          'user_id',
        ].sort(),
      );
      expect(page.next_cursor).toBeNull();
    });

    it("filters by every field; one user never sees another user's rows", async () => {
      expect(await ids(`user=${encodeURIComponent(USER)}`)).toEqual([2, 0]);
      expect(await ids('user=bob')).toEqual([1]);
      expect(await ids('user=nobody')).toEqual([]);
      expect(await ids(`category=${encodeURIComponent(CATEGORY)}`)).toEqual([1, 0]);
      expect(await ids(`category=${encodeURIComponent(CATEGORY)}&user=bob`)).toEqual([1]);
      expect(await ids('channel=sms&status=sent&backend=twilio-a&category=billing')).toEqual([2]);
      expect(await ids('backend=twilio-b&category=billing')).toEqual([]);
      expect(await ids('status=failed&category=billing')).toEqual([]);
      expect(await ids('channel=email&category=billing')).toEqual([]);
    });

    it('matches the recipient exactly as normalised, and still answers it masked', async () => {
      for (const form of ['+15550100001', '+1 (555) 010-0001', '+1.555.010.0001']) {
        const page = await json<Page<Row>>(`deliveries?recipient=${encodeURIComponent(form)}`);
        expect(page.items.map((r) => made.indexOf(r.id))).toEqual([3, 0]);
        expect(JSON.stringify(page)).not.toContain('0100001');
        expect(page.items.every((r) => r.recipient === '+1555****001')).toBe(true);
      }
      expect(await ids(`recipient=${encodeURIComponent('+15550100009')}`)).toEqual([]);
      const bad = await errorOf('deliveries?channel=sms&recipient=12ab');
      expect(bad).toMatchObject({ status: 400, error: { code: 'invalid_argument' } });
      expect(bad.error.message).toMatch(/recipient/);
    });

    it('pages by cursor at the limit', async () => {
      const first = await json<Page<Row>>('deliveries?limit=2&channel=sms');
      expect(first.items).toHaveLength(2);
      expect(first.next_cursor).toEqual(expect.any(String));
      const second = await json<Page<Row>>(`deliveries?limit=2&channel=sms&cursor=${first.next_cursor}`);
      expect(second.items).toHaveLength(2);
      expect(second.items.map((r) => r.id)).not.toContain(first.items[0]!.id);
      const all = await json<Page<Row>>(
        `deliveries?limit=${MAX_PAGE}&category=${encodeURIComponent(CATEGORY)}`,
      );
      expect(all.items).toHaveLength(2);
      expect(all.next_cursor).toBeNull();
      // Exactly `limit` rows left: the page is full and the next one is empty.
      const two = await json<Page<Row>>(`deliveries?limit=1&category=${encodeURIComponent(CATEGORY)}`);
      const last = await json<Page<Row>>(
        `deliveries?limit=1&category=${encodeURIComponent(CATEGORY)}&cursor=${two.next_cursor}`,
      );
      expect(last.items.map((r) => r.id)).toEqual([made[0]]);
      expect(last.next_cursor).toBeNull();
      // A cursor of another filter is refused.
      expect(await errorOf(`deliveries?limit=2&channel=email&cursor=${first.next_cursor}`)).toMatchObject({
        status: 400,
        error: { code: 'invalid_argument' },
      });
    });

    it('refuses bad bounds and input with 400 naming the parameter', async () => {
      expect((await get(`deliveries?limit=${MAX_PAGE}`)).status).toBe(200);
      for (const [query, field] of [
        ['limit=0', 'limit'],
        [`limit=${MAX_PAGE + 1}`, 'limit'],
        ['limit=-1', 'limit'],
        ['limit=abc', 'limit'],
        ['cursor=garbage', 'cursor'],
        ['cursor=' + 'A'.repeat(50), 'cursor'],
        ['channel=fax', 'channel'],
        ['status=lost', 'status'],
        ['user=a%0Ab', 'user'],
        ['user=a&user=b', 'user'],
        [`category=${'字'.repeat(257)}`, 'category'],
      ] as const) {
        const res = await errorOf(`deliveries?${query}`);
        expect({ query, status: res.status, code: res.error.code }).toEqual({
          query,
          status: 400,
          code: 'invalid_argument',
        });
        expect(res.error.message).toContain(field);
      }
      // 256 code points (emoji are two UTF-16 units each) is within the bound.
      expect((await get(`deliveries?category=${encodeURIComponent('😀'.repeat(256))}`)).status).toBe(200);
    });
  });

  it('a delivery that fails, is retried on the second backend (failover) and gets a receipt has that timeline', async () => {
    const a = standIns.twilio['twilio-a'];
    const b = standIns.twilio['twilio-b'];
    // Routing `fallback`: the retry of a retryable failure goes to the next backend.
    a.script.push(twilioError(503, 20500, 'unavailable'));
    const before = b.requests.length;
    const { delivery } = await submit('+15550109999', { userId: 'failover-user', category: CATEGORY });
    const sent = await waitFor(
      () => json<{ delivery: Row }>(`deliveries/${delivery.id}/timeline`),
      (t) => t.delivery.status === 'sent',
    );
    expect(sent.delivery).toMatchObject({ backend: 'twilio-b', attempts: 2 });
    const request = b.requests[before]!;
    const sid = (await svc.app.deliveries.get(delivery.id)).providerReference!;
    expect((await sendStatusCallback(request, sid, 'delivered', svc.baseUrl)).status).toBeLessThan(300);
    const { timeline, notification } = await waitFor(
      () =>
        json<{ delivery: Row; timeline: Array<Record<string, unknown>>; notification: unknown }>(
          `deliveries/${delivery.id}/timeline`,
        ),
      (t) => t.delivery.status === 'delivered',
    );
    expect(notification).toBeNull();
    expect(timeline.map((e) => e.kind)).toEqual([
      'submitted',
      'attempt',
      'failover',
      'attempt',
      'sent',
      'receipt',
      'delivered',
    ]);
    expect(timeline[0]).toMatchObject({ kind: 'submitted', channel: 'sms', backend: 'twilio-a' });
    expect(timeline.filter((e) => e.kind === 'attempt')).toEqual([
      expect.objectContaining({
        number: 1,
        backend: 'twilio-a',
        outcome: 'retryable',
        duration_ms: expect.any(Number),
      }),
      expect.objectContaining({ number: 2, backend: 'twilio-b', outcome: 'sent', reason: null }),
    ]);
    expect(timeline[1]!.reason).toEqual(expect.any(String));
    expect(timeline[1]!.provider_code).toBe('20500');
    expect(timeline[2]).toMatchObject({ kind: 'failover', from: 'twilio-a', to: 'twilio-b' });
    expect(timeline[5]).toMatchObject({ kind: 'receipt', event: 'delivered', status: 'delivered' });
    // Oldest first.
    const times = timeline.map((e) => Date.parse(e.at as string));
    expect([...times].sort((x, y) => x - y)).toEqual(times);
    expect(JSON.stringify(timeline)).not.toContain('0109999');
  });

  it('a timeline of an unknown delivery is 404, of a malformed id 400', async () => {
    expect(await errorOf('deliveries/7d444840-9dc0-41ce-9d6e-1ba4f44d7a71/timeline')).toMatchObject({
      status: 404,
      error: { code: 'not_found' },
    });
    expect((await errorOf('deliveries/not-a-uuid/timeline')).status).toBe(400);
    expect((await errorOf('notifications/7d444840-9dc0-41ce-9d6e-1ba4f44d7a71')).status).toBe(404);
  });

  it('lists notifications (empty here) with the same bounds', async () => {
    expect(await json<Page<unknown>>('notifications')).toEqual({ items: [], next_cursor: null });
    expect((await errorOf('notifications?limit=0')).status).toBe(400);
    expect((await errorOf(`notifications?limit=${MAX_PAGE + 1}`)).status).toBe(400);
    expect((await errorOf('notifications?status=lost')).status).toBe(400);
    expect((await errorOf('notifications?cursor=garbage')).status).toBe(400);
  });

  describe('live stream', () => {
    /** An open stream: its frames as they arrive (`event` and parsed `data`). */
    async function open(query: string, as = token) {
      const controller = new AbortController();
      const res = await fetch(`${svc.baseUrl}${CONSOLE_API_PATH}/activity/stream?${query}`, {
        headers: { Authorization: `Bearer ${as}`, Accept: 'text/event-stream' },
        signal: controller.signal,
      });
      const frames: Array<{ event: string; data: { change: string; delivery: Row } }> = [];
      let text = '';
      let connected = false;
      const reading = (async () => {
        if (!res.body) return;
        const decoder = new TextDecoder();
        try {
          for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
            text += decoder.decode(chunk, { stream: true });
            let cut: number;
            while ((cut = text.indexOf('\n\n')) >= 0) {
              const block = text.slice(0, cut);
              text = text.slice(cut + 2);
              if (block.startsWith(': connected')) connected = true;
              const event = /^event: (.*)$/m.exec(block)?.[1];
              const data = /^data: (.*)$/m.exec(block)?.[1];
              if (event && data) frames.push({ event, data: JSON.parse(data) });
            }
          }
        } catch {
          // aborted
        }
      })();
      return {
        res,
        frames,
        live: () => waitFor(async () => connected, Boolean),
        close: async () => {
          controller.abort();
          await reading;
        },
      };
    }

    it('relays new deliveries and status changes matching the filters, masked', async () => {
      const stream = await open(`category=${encodeURIComponent('🔴 live')}&channel=sms`);
      expect(stream.res.status).toBe(200);
      expect(stream.res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      try {
        await stream.live();
        await submit('+15550107777', { category: 'other' });
        const { delivery } = await submit('+15550108888', { category: '🔴 live', scope: 'caller-z' });
        const frames = await waitFor(
          async () => stream.frames.filter((f) => f.event === 'delivery'),
          (f) => f.some((x) => x.data.delivery.status === 'sent'),
        );
        expect(frames.every((f) => f.data.delivery.id === delivery.id)).toBe(true);
        expect(frames[0]!.data).toMatchObject({
          change: 'created',
          delivery: { id: delivery.id, status: 'pending', recipient: '+1555****888', category: '🔴 live' },
        });
        expect(frames.at(-1)!.data).toMatchObject({ change: 'status', delivery: { status: 'sent' } });
        expect(JSON.stringify(stream.frames)).not.toContain('0108888');
      } finally {
        await stream.close();
      }
    });

    it('bounds the streams per operator (429) and refuses a client that does not ask for a stream', async () => {
      const one = await open('');
      const two = await open('');
      try {
        expect([one.res.status, two.res.status]).toEqual([200, 200]);
        const third = await open('');
        expect(third.res.status).toBe(429);
        expect(third.res.headers.get('retry-after')).toBe('5');
        await third.close();
        const other = await open('', await operatorToken('ops-bob'));
        expect(other.res.status).toBe(200);
        await other.close();
      } finally {
        await one.close();
        await two.close();
      }
      const plain = await get('stream');
      expect(plain.status).toBe(400);
      expect(((await plain.json()) as { error: { message: string } }).error.message).toMatch(/event-stream/);
      expect((await open('status=lost')).res.status).toBe(400);
    });
  });
});
