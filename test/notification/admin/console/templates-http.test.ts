/**
 * The console's templates API: the list by name, one name's variants, an edit with UpsertTemplate's
 * validation (a syntax error is 400 with its line and column), the preview of unsaved source through
 * the renderer RenderTemplate uses (emoji, CJK and right-to-left data; SMS segments in GSM-7 and
 * UCS-2), and the body bound (413).
 */
import { CONSOLE_API_PATH } from '../../../../services/notification/admin/console/console-gateway';
import { TEMPLATE_BODY_BYTES } from '../../../../services/notification/admin/console/sections/templates';
import type { RunningNotificationApp } from '../../../support/notification-app';
import { authed, operatorToken, startAdminService } from '../harness';

interface ErrorJson {
  error: { code: string; message: string; field?: string; line?: number; column?: number };
}
interface PreviewJson {
  content: Record<string, string>;
  locale: string;
  sms: { encoding: string; segments: number; units: number } | null;
}

let svc: RunningNotificationApp;
let token: string;

beforeAll(async () => {
  svc = await startAdminService({
    notify: {
      categories: [
        { name: 'orders', channels: ['inbox', 'email', 'sms'], description: 'Orders' },
        {
          name: 'comments',
          channels: ['inbox', 'push'],
          description: 'Comments',
          digest: { push: { window: '1h' } },
        },
      ],
    },
  });
  token = await operatorToken('ops-ann');
});
afterAll(() => svc?.close());

const url = (path: string): string => `${svc.baseUrl}${CONSOLE_API_PATH}/${path}`;
const send = (method: string, path: string, body: unknown): Promise<Response> =>
  fetch(
    url(path),
    authed(token, {
      method,
      headers: { 'Content-Type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    }),
  );
const get = async (path: string): Promise<{ status: number; body: unknown }> => {
  const res = await fetch(url(path), authed(token));
  return { status: res.status, body: await res.json() };
};

describe('console templates API', () => {
  it('saves a variant (201 then 200), lists it by name and answers its variants', async () => {
    const put = await send('PUT', 'templates/orders', {
      channel: 'email',
      locale: 'en',
      content: { subject: 'Order {{ data.id }}', html: '<p>Hi {{ data.name }}</p>' },
    });
    expect(put.status).toBe(201);
    const saved = (await put.json()) as { variant: { locale: string; updated_at: string }; created: boolean };
    expect(saved.created).toBe(true);
    const again = await send('PUT', 'templates/orders', {
      channel: 'email',
      locale: 'en',
      content: { subject: 'Order #{{ data.id }}', html: '<p>Hi {{ data.name }}</p>' },
    });
    expect(again.status).toBe(200);
    await send('PUT', 'templates/orders', {
      channel: 'sms',
      locale: 'ar',
      content: { text: 'طلبك {{ data.id }}' },
    });

    const list = (await get('templates')).body as { items: Record<string, unknown>[]; next_cursor: null };
    expect(list.next_cursor).toBeNull();
    expect(list.items.map((i) => i.name)).toEqual(['comments', 'comments.digest', 'orders']);
    const orders = list.items.find((i) => i.name === 'orders')!;
    expect(orders).toMatchObject({ channels: ['inbox', 'email', 'sms'], locales: ['ar', 'en'], variants: 2 });
    expect(orders.updated_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(list.items.find((i) => i.name === 'comments.digest')).toMatchObject({
      channels: ['push'],
      locales: [],
      variants: 0,
      updated_at: null,
    });

    const one = await get('templates/orders');
    expect(one.status).toBe(200);
    const body = one.body as {
      variants: { channel: string; locale: string; content: Record<string, string> }[];
    };
    expect(body.variants).toHaveLength(2);
    expect(body.variants.find((v) => v.channel === 'email')!.content.subject).toBe('Order #{{ data.id }}');
    expect((one.body as { parts: Record<string, string[]> }).parts.email).toEqual([
      'subject',
      'html',
      'text',
    ]);
  });

  it("edits and reads a digest's template by its name <category>.digest", async () => {
    const put = await send('PUT', 'templates/comments.digest', {
      channel: 'push',
      locale: 'en',
      content: { title: '{{ data.count }} comments', body: 'New comments' },
    });
    expect(put.status).toBe(201);
    const got = await get('templates/comments.digest');
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      name: 'comments.digest',
      channels: ['push'],
      variants: [{ channel: 'push' }],
    });
    const wrong = await send('PUT', 'templates/comments.digest', {
      channel: 'inbox',
      locale: 'en',
      content: { title: 'x', body: 'y' },
    });
    expect(wrong.status).toBe(400);
  });

  it('answers 404 for an unknown name', async () => {
    const res = await get('templates/nothing-here');
    expect(res.status).toBe(404);
    expect((res.body as ErrorJson).error.code).toBe('not_found');
  });

  it('refuses a syntax error with 400 naming the part, its line and column, and stores nothing', async () => {
    const res = await send('PUT', 'templates/orders', {
      channel: 'sms',
      locale: 'fr',
      content: { text: 'Bonjour\n  {{ data.name | upcase }\n' },
    });
    expect(res.status).toBe(400);
    const err = ((await res.json()) as ErrorJson).error;
    expect(err).toMatchObject({ code: 'invalid_argument', field: 'content.text', line: 2, column: 3 });
    expect(err.message).toMatch(/content\.text: .*\(line 2, column 3\)/);
    const variants = ((await get('templates/orders')).body as { variants: { locale: string }[] }).variants;
    expect(variants.map((v) => v.locale)).not.toContain('fr');
  });

  it('refuses a part the channel lacks, a channel the name lacks, and a bad locale with 400', async () => {
    const cases: [unknown, RegExp][] = [
      [
        { channel: 'sms', locale: 'en', content: { subject: 'x', text: 'y' } },
        /the sms channel has no subject/,
      ],
      [{ channel: 'push', locale: 'en', content: { title: 'x', body: 'y' } }, /has no push channel/],
      [{ channel: 'sms', locale: 'not a locale!', content: { text: 'y' } }, /locale/],
      [{ channel: 'sms', locale: 'en', content: { text: 7 } }, /content\.text must be a string/],
      [{ channel: 'sms', locale: 'en', content: {} }, /content: /],
    ];
    for (const [body, message] of cases) {
      const res = await send('PUT', 'templates/orders', body);
      expect(res.status).toBe(400);
      expect(((await res.json()) as ErrorJson).error.message).toMatch(message);
    }
  });

  it('previews unsaved source with emoji, CJK and right-to-left data, not storing it', async () => {
    const res = await send('POST', 'templates/preview', {
      name: 'orders',
      channel: 'email',
      locale: 'ja',
      template: {
        subject: '注文 {{ data.id }} 📦',
        html: '<p dir="auto">{{ data.name }} — {{ data.note }}</p>',
      },
      data: { id: 'A-7', name: '山田 太郎 😀', note: 'שלום עליכם' },
    });
    expect(res.status).toBe(200);
    const preview = (await res.json()) as PreviewJson;
    expect(preview.content.subject).toBe('注文 A-7 📦');
    expect(preview.content.html).toContain('山田 太郎 😀 — שלום עליכם');
    expect(preview.content.text).toContain('山田 太郎 😀');
    expect(preview.sms).toBeNull();
    const variants = ((await get('templates/orders')).body as { variants: { locale: string }[] }).variants;
    expect(variants.map((v) => v.locale)).not.toContain('ja');
  });

  it('previews a push template with its data object rendered, and keeps a stored part the editor left out', async () => {
    const put = await send('PUT', 'templates/comments', {
      channel: 'push',
      locale: 'en',
      content: {
        title: 'New comment',
        body: '{{ data.who }} wrote',
        data: { thread: '{{ data.thread }}', n: 3 },
      },
    });
    expect(put.status).toBe(201);
    const res = await send('POST', 'templates/preview', {
      name: 'comments',
      channel: 'push',
      locale: 'en',
      template: { body: '{{ data.who }} replied 💬' },
      data: { who: 'مريم', thread: '话题-9' },
    });
    expect(res.status).toBe(200);
    const preview = (await res.json()) as { content: Record<string, unknown> };
    expect(preview.content).toEqual({
      title: 'New comment',
      body: 'مريم replied 💬',
      data: { thread: '话题-9', n: 3 },
    });
  });

  it('counts SMS segments: GSM-7 (160 in one) and UCS-2 (70 in one, an emoji two units)', async () => {
    const preview = async (text: string, data: Record<string, unknown>): Promise<PreviewJson> => {
      const res = await send('POST', 'templates/preview', {
        name: 'orders',
        channel: 'sms',
        locale: 'en',
        template: { text },
        data,
      });
      expect(res.status).toBe(200);
      return (await res.json()) as PreviewJson;
    };
    expect((await preview('{{ data.t }}', { t: 'a'.repeat(160) })).sms).toEqual({
      encoding: 'GSM-7',
      segments: 1,
      units: 160,
    });
    expect((await preview('{{ data.t }}', { t: 'a'.repeat(161) })).sms).toEqual({
      encoding: 'GSM-7',
      segments: 2,
      units: 161,
    });
    expect((await preview('{{ data.t }}', { t: '字'.repeat(70) })).sms).toEqual({
      encoding: 'UCS-2',
      segments: 1,
      units: 70,
    });
    expect((await preview('{{ data.t }}', { t: '字'.repeat(71) })).sms).toEqual({
      encoding: 'UCS-2',
      segments: 2,
      units: 71,
    });
    const emoji = await preview('Hi {{ data.t }}', { t: '😀' });
    expect(emoji.content.text).toBe('Hi 😀');
    expect(emoji.sms).toEqual({ encoding: 'UCS-2', segments: 1, units: 5 });
    const rtl = await preview('{{ data.t }}', { t: 'مرحبا' });
    expect(rtl.sms!.encoding).toBe('UCS-2');
  });

  it('answers a preview syntax error with line and column, and a missing variable naming it', async () => {
    const bad = await send('POST', 'templates/preview', {
      name: 'orders',
      channel: 'sms',
      locale: 'en',
      template: { text: 'ok\nok\n    {% if data.x %}never closed' },
      data: {},
    });
    expect(bad.status).toBe(400);
    const err = ((await bad.json()) as ErrorJson).error;
    expect(err).toMatchObject({ code: 'invalid_argument', field: 'template.text', line: 3, column: 5 });

    const missing = await send('POST', 'templates/preview', {
      name: 'orders',
      channel: 'sms',
      locale: 'en',
      template: { text: 'Hi {{ data.name }}' },
      data: {},
    });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as ErrorJson).error.message).toMatch(/data\.name/);

    const notObject = await send('POST', 'templates/preview', {
      name: 'orders',
      channel: 'sms',
      template: { text: 'x' },
      data: [1],
    });
    expect(notObject.status).toBe(400);
  });

  it('bounds the body: at the bound it is read, past it 413', async () => {
    const envelope = JSON.stringify({
      name: 'orders',
      channel: 'sms',
      locale: 'en',
      template: { text: 'x' },
      data: { pad: '' },
    });
    const pad = 'a'.repeat(TEMPLATE_BODY_BYTES - Buffer.byteLength(envelope));
    const at = JSON.stringify({
      name: 'orders',
      channel: 'sms',
      locale: 'en',
      template: { text: 'x' },
      data: { pad },
    });
    expect(Buffer.byteLength(at)).toBe(TEMPLATE_BODY_BYTES);
    expect((await send('POST', 'templates/preview', at)).status).toBe(200);
    const past = JSON.stringify({
      name: 'orders',
      channel: 'sms',
      locale: 'en',
      template: { text: 'x' },
      data: { pad: `${pad}a` },
    });
    const res = await send('POST', 'templates/preview', past);
    expect(res.status).toBe(413);
    expect(((await res.json()) as ErrorJson).error.code).toBe('resource_exhausted');
    // A part past templates.max_source_bytes (64 KiB) inside the body bound: 400 from the templates area.
    const big = await send('PUT', 'templates/orders', {
      channel: 'sms',
      locale: 'en',
      content: { text: '😀'.repeat(16 * 1024 + 1) },
    });
    expect(big.status).toBe(400);
    expect(((await big.json()) as ErrorJson).error.message).toMatch(/longer than 65536 bytes/);
  });
});
