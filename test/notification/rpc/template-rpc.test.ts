/**
 * TemplateService against the real app: gRPC (grpc-js client) and Connect, on the memory store and
 * on real PostgreSQL (the app opens it, runs the migrations and keeps templates there).
 */
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import * as grpc from '@grpc/grpc-js';
import { TemplateChannel, TemplateService } from '../../../shared/gen/svc/notification/v1/templates_pb';
import type { NotificationConfigInput } from '../../../services/notification/config';
import { startNotificationApp, type RunningNotificationApp } from '../../support/notification-app';
import { createTestDatabase } from '../../support/database';
import { grpcClient, unary } from '../../support/grpc-clients';

const NOTIFY: NotificationConfigInput['notify'] = {
  default_locale: 'en',
  categories: [
    { name: 'orders', channels: ['inbox', 'email', 'sms', 'push'] },
    { name: 'security', channels: ['email'], required: true },
  ],
};

async function codeOf(work: () => Promise<unknown>): Promise<{ code: Code; message: string }> {
  try {
    await work();
  } catch (err) {
    const e = ConnectError.from(err);
    return { code: e.code, message: e.rawMessage };
  }
  throw new Error('expected an error');
}

function suite(
  name: string,
  configure: () => Promise<{ overrides: NotificationConfigInput; done(): Promise<void> }>,
) {
  describe(name, () => {
    let running: RunningNotificationApp;
    let done: () => Promise<void>;
    let client: ReturnType<typeof createClient<typeof TemplateService>>;
    beforeAll(async () => {
      const c = await configure();
      done = c.done;
      running = await startNotificationApp({ notify: NOTIFY, ...c.overrides });
      client = createClient(
        TemplateService,
        createConnectTransport({ baseUrl: running.baseUrl, httpVersion: '1.1', useBinaryFormat: false }),
      );
    }, 60_000);
    afterAll(async () => {
      await running?.close();
      await done?.();
    });

    test('Upsert, Get, List and Delete round-trip a template; a second upsert is not created', async () => {
      const content = {
        subject: 'Pedido {{ data.id }} 📦',
        html: '<p>Hola {{ data.name }} — مرحبا 你好</p>',
      };
      const first = await client.upsertTemplate({
        category: 'orders',
        channel: TemplateChannel.EMAIL,
        locale: 'es-mx',
        content,
      });
      expect(first.created).toBe(true);
      expect(first.template).toMatchObject({ locale: 'es-MX', channel: TemplateChannel.EMAIL, content });
      const again = await client.upsertTemplate({
        category: 'orders',
        channel: TemplateChannel.EMAIL,
        locale: 'es-MX',
        content,
      });
      expect(again.created).toBe(false);
      const got = await client.getTemplate({
        category: 'orders',
        channel: TemplateChannel.EMAIL,
        locale: 'es-MX',
      });
      expect(got.template?.content).toMatchObject(content);
      const list = await client.listTemplates({ category: 'orders' });
      expect(list.templates.map((t) => t.locale)).toContain('es-MX');
      await client.deleteTemplate({ category: 'orders', channel: TemplateChannel.EMAIL, locale: 'es-MX' });
      const gone = await codeOf(() =>
        client.getTemplate({ category: 'orders', channel: TemplateChannel.EMAIL, locale: 'es-MX' }),
      );
      expect(gone.code).toBe(Code.NotFound);
    });

    test('RenderTemplate falls back es-MX -> es, renders in the zone, and counts SMS segments', async () => {
      await client.upsertTemplate({
        category: 'orders',
        channel: TemplateChannel.SMS,
        locale: 'es',
        content: { text: 'Tu pedido {{ data.id }} llega el {{ data.at | date: "long" }} 🚚' },
      });
      const r = await client.renderTemplate({
        category: 'orders',
        channel: TemplateChannel.SMS,
        locale: 'es-MX',
        timeZone: 'America/Mexico_City',
        data: { id: 'A7', at: '2026-12-01T03:00:00Z' },
      });
      expect(r.locale).toBe('es');
      expect(r.content?.text).toBe('Tu pedido A7 llega el 30 de noviembre de 2026 🚚');
      expect(r.smsSegments).toMatchObject({ encoding: 'UCS-2', segments: 1 });
      expect(r.smsSegments?.units).toBe(r.content!.text.length);
    });

    test('Bad input is INVALID_ARGUMENT with a clear message: unknown category, foreign part, syntax, missing variable', async () => {
      const unknown = await codeOf(() =>
        client.upsertTemplate({
          category: 'promo',
          channel: TemplateChannel.SMS,
          locale: 'en',
          content: { text: 'x' },
        }),
      );
      expect(unknown).toEqual({
        code: Code.InvalidArgument,
        message: expect.stringContaining('the configured categories are orders, security'),
      });
      const part = await codeOf(() =>
        client.upsertTemplate({
          category: 'orders',
          channel: TemplateChannel.SMS,
          locale: 'en',
          content: { text: 'x', subject: 'y' },
        }),
      );
      expect(part).toEqual({
        code: Code.InvalidArgument,
        message: expect.stringContaining('the sms channel has no subject'),
      });
      const syntax = await codeOf(() =>
        client.upsertTemplate({
          category: 'orders',
          channel: TemplateChannel.SMS,
          locale: 'en',
          content: { text: 'a\n{{ data.x' },
        }),
      );
      expect(syntax).toEqual({
        code: Code.InvalidArgument,
        message: expect.stringMatching(/content\.text: .*line 2, column 1/),
      });
      const channel = await codeOf(() =>
        client.upsertTemplate({
          category: 'orders',
          channel: TemplateChannel.UNSPECIFIED,
          locale: 'en',
          content: { text: 'x' },
        }),
      );
      expect(channel.code).toBe(Code.InvalidArgument);
      await client.upsertTemplate({
        category: 'orders',
        channel: TemplateChannel.INBOX,
        locale: 'en',
        content: { title: '{{ data.order.id }}' },
      });
      const missing = await codeOf(() =>
        client.renderTemplate({ category: 'orders', channel: TemplateChannel.INBOX, locale: 'en', data: {} }),
      );
      expect(missing).toEqual({
        code: Code.InvalidArgument,
        message: expect.stringContaining('data.order.id'),
      });
      const none = await codeOf(() =>
        client.renderTemplate({
          category: 'security',
          channel: TemplateChannel.EMAIL,
          locale: 'fr',
          data: {},
        }),
      );
      expect(none.code).toBe(Code.NotFound);
    });

    test('over gRPC: an email renders with CSS inlined, escaped data and a derived text part', async () => {
      const g = grpcClient(TemplateService, running.grpcAddress);
      try {
        await unary(g, 'upsertTemplate', {
          category: 'security',
          channel: TemplateChannel.EMAIL,
          locale: 'en',
          content: { subject: 'New sign-in', html: '<style>b{color:red}</style><b>{{ data.device }}</b>' },
        });
        const { response } = await unary<{ content: { html: string; text: string } }>(g, 'renderTemplate', {
          category: 'security',
          channel: TemplateChannel.EMAIL,
          locale: 'en-GB',
          data: { device: '<script>x</script>' },
        });
        expect(response.content.html).toBe('<b style="color: red;">&lt;script&gt;x&lt;/script&gt;</b>');
        expect(response.content.text).toBe('<script>x</script>');
        const bad = await unary(g, 'getTemplate', {
          category: 'nope',
          channel: TemplateChannel.EMAIL,
          locale: 'en',
        }).catch((e: grpc.ServiceError) => e);
        expect((bad as grpc.ServiceError).code).toBe(grpc.status.INVALID_ARGUMENT);
      } finally {
        g.close();
      }
    });

    test('ListTemplates pages with the shared page-size rule and its token', async () => {
      for (const locale of ['de', 'fr', 'it', 'pt']) {
        await client.upsertTemplate({
          category: 'orders',
          channel: TemplateChannel.PUSH,
          locale,
          content: { title: locale },
        });
      }
      const first = await client.listTemplates({ category: 'orders', pageSize: 2 });
      expect(first.templates).toHaveLength(2);
      const seen = [...first.templates];
      let token = first.nextPageToken;
      while (token) {
        const page = await client.listTemplates({ category: 'orders', pageSize: 2, pageToken: token });
        seen.push(...page.templates);
        token = page.nextPageToken;
      }
      const keys = seen.map((t) => `${t.channel}/${t.locale}`);
      expect(new Set(keys).size).toBe(keys.length);
      expect(keys).toEqual(expect.arrayContaining(['4/de', '4/fr', '4/it', '4/pt']));
      expect((await codeOf(() => client.listTemplates({ pageSize: -1 }))).code).toBe(Code.InvalidArgument);
    });
  });
}

suite('TemplateService (memory store)', async () => ({
  overrides: { templates: { store_backend: 'memory' } },
  done: async () => undefined,
}));

suite('TemplateService (PostgreSQL)', async () => {
  const db = await createTestDatabase('templatesrpc');
  return {
    overrides: { database: { url: db.url }, templates: { store_backend: 'database' } },
    done: () => db.drop(),
  };
});
