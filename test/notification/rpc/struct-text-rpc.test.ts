/**
 * Free-form JSON objects (`google.protobuf.Struct`: inbox metadata, push template data, user
 * attributes, Notify data) sent as Connect JSON, the way a stranger's curl sends them. Connect's JSON parser
 * refuses a lone surrogate in a string field, but a Struct's values and keys reach the service as
 * they are, and PostgreSQL's jsonb refuses a lone surrogate (`"\ud800"`) and a NUL: found by the
 * black-box probe (C-probe-log.md), where they answered HTTP 500 `internal`. The app runs on the
 * embedded database so the stores are the ones that would fail.
 */
import { startNotificationApp, type RunningNotificationApp } from '../../support/notification-app';

let n: RunningNotificationApp;
beforeAll(async () => {
  n = await startNotificationApp({
    database: { data_dir: ':memory:' },
    inbox: { store_backend: 'database' },
    delivery: { store_backend: 'database' },
    templates: { store_backend: 'database' },
    notify: { default_locale: 'en', categories: [{ name: 'orders', channels: ['inbox', 'push'] }] },
  });
}, 60_000);
afterAll(async () => {
  await n?.close();
});

/** POSTs `json` (raw text, so escapes go on the wire as written) to a Connect JSON endpoint. */
async function post(path: string, json: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${n.baseUrl}/svc.notification.v1.${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: json,
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

// Raw JSON texts: `\\ud800` here is the six characters `\ud800` on the wire.
const UNSTORABLE = ['{"k":"a\\ud800b"}', '{"k":"\\udc00"}', '{"\\ud83d":"v"}', '{"k\\u0000":"v"}'];

describe('a Struct with a lone surrogate or a NUL, over Connect JSON', () => {
  test.each(UNSTORABLE)(
    'InboxService/Send metadata %s is 400 invalid_argument naming metadata',
    async (struct) => {
      const { status, body } = await post(
        'InboxService/Send',
        `{"user_id":"probe","title":"t","body":"b","metadata":${struct}}`,
      );
      expect({ status, body }).toEqual({
        status: 400,
        body: {
          code: 'invalid_argument',
          message: 'metadata must not contain NUL characters or broken text',
        },
      });
    },
  );

  test.each(UNSTORABLE)(
    'TemplateService/UpsertTemplate push data %s is 400 invalid_argument',
    async (struct) => {
      const { status, body } = await post(
        'TemplateService/UpsertTemplate',
        `{"category":"orders","channel":"TEMPLATE_CHANNEL_PUSH","locale":"en","content":{"title":"t","data":${struct}}}`,
      );
      expect(status).toBe(400);
      expect(body.code).toBe('invalid_argument');
      expect(body.message).toMatch(/^content\.data/);
    },
  );

  test.each(UNSTORABLE)('UserService/UpsertUser attributes %s is 400 invalid_argument', async (struct) => {
    const { status, body } = await post(
      'UserService/UpsertUser',
      `{"user_id":"probe","attributes":${struct}}`,
    );
    expect({ status, body }).toEqual({
      status: 400,
      body: {
        code: 'invalid_argument',
        message: 'attributes must not contain NUL characters or broken text',
      },
    });
  });

  test.each(UNSTORABLE)(
    'NotifyService/Notify data %s, to a topic or scheduled, is 400 invalid_argument',
    async (struct) => {
      expect((await post('UserService/UpsertUser', '{"user_id":"probe"}')).status).toBe(200);
      expect(
        (await post('UserService/SubscribeTopic', '{"topic":"probe-topic","user_ids":["probe"]}')).status,
      ).toBe(200);
      for (const target of ['"topic":"probe-topic"', '"user_id":"probe","delay":"3600s"']) {
        const { status, body } = await post(
          'NotifyService/Notify',
          `{${target},"category":"orders","data":${struct}}`,
        );
        expect({ status, body }).toEqual({
          status: 400,
          body: { code: 'invalid_argument', message: 'data must not contain NUL characters or broken text' },
        });
      }
    },
  );

  test('nothing was stored, and a whole emoji pair (`\\ud83d\\ude00`) is stored as text', async () => {
    const ok = await post(
      'InboxService/Send',
      '{"user_id":"probe","title":"t","metadata":{"\\ud83d\\ude00":"\\ud83d\\udce6","k":"\\\\u0000"}}',
    );
    expect(ok.status).toBe(200);
    expect((ok.body.message as { metadata: unknown }).metadata).toEqual({ '😀': '📦', k: '\\u0000' });
    const inbox = await post('InboxService/GetInbox', '{"user_id":"probe"}');
    expect((inbox.body.messages as unknown[]).length).toBe(1);
    const template = await post(
      'TemplateService/GetTemplate',
      '{"category":"orders","channel":"TEMPLATE_CHANNEL_PUSH","locale":"en"}',
    );
    expect(template.status).toBe(404);
  });
});
