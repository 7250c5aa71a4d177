/**
 * The admin event stream's bounds: nothing stays attached to the shutdown signal after a stream
 * ends, the watcher caps answer 429 with Retry-After (shared with WatchInbox), and a stream ends when
 * its token expires, saying so first.
 */
import { HttpRouteTable } from '../../../shared/http/routes';
import { getEventListeners } from 'node:events';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Metadata, status as grpcStatus } from '@grpc/grpc-js';
import type * as grpc from '@grpc/grpc-js';
import { AdminAuth } from '../../../services/notification/admin/auth';
import {
  AdminGateway,
  formatSseEvent,
  STREAM_RETRY_AFTER_SECONDS,
} from '../../../services/notification/admin/gateway';
import { InMemoryInboxStore } from '../../../services/notification/inbox/memory-store';
import { silentLogger } from '../../../shared/logging/logger';
import type { RunningNotificationApp } from '../../support/notification-app';
import { buildService } from '../inbox/support';
import { authOptions, hsToken, startAdminService, until } from './harness';
import { openSse, type SseFrame } from '../../support/sse-client';

const STREAM = '/admin/notifications/stream';

/** Listeners and AbortSignal.any dependants hanging on `signal`. */
function attachedTo(signal: AbortSignal): number {
  const dependants = Object.getOwnPropertySymbols(signal).find((s) => s.description === 'kDependantSignals');
  const set = dependants
    ? (signal as unknown as Record<symbol, Set<unknown> | undefined>)[dependants]
    : undefined;
  return getEventListeners(signal, 'abort').length + (set?.size ?? 0);
}

describe('admin SSE and the shutdown signal', () => {
  const shutdown = new AbortController();
  const { service, hub } = buildService(new InMemoryInboxStore(), { max_watchers: 100 });
  let server: Server;
  let port: number;

  beforeAll(async () => {
    await hub.start();
    const gateway = new AdminGateway({
      inbox: service,
      auth: new AdminAuth(authOptions()),
      logger: silentLogger(),
      maxPageSize: 50,
      shutdownSignal: shutdown.signal,
    });
    const table = new HttpRouteTable().add(...gateway.routes());
    server = createServer((req, res) => void table.dispatch(req, res, silentLogger()));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await hub.stop();
    await new Promise((resolve) => server.close(resolve));
  });

  /** Opens one stream, waits for its first bytes, and closes it from the client side. */
  function openAndClose(token: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, path: STREAM, headers: { Authorization: `Bearer ${token}` } },
        (res) => {
          if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
          res.once('data', () => {
            res.on('close', resolve);
            req.destroy();
          });
        },
      );
      req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
      req.end();
    });
  }

  it('after 10,000 streams opened and closed, nothing stays attached to the shutdown signal', async () => {
    const baseline = attachedTo(shutdown.signal);
    const token = await hsToken('leak-check');
    let done = 0;
    const worker = async (): Promise<void> => {
      while (done < 10_000) {
        done++;
        await openAndClose(token);
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    await until(() => hub.watcherCount === 0);
    expect(done).toBeGreaterThanOrEqual(10_000);
    expect(attachedTo(shutdown.signal)).toBe(baseline);
  }, 300_000); // a bound against hangs: 10,000 streams take minutes on a loaded two-core machine

  it('while a stream is open it has one listener on the shutdown signal, and shutdown ends it', async () => {
    const baseline = attachedTo(shutdown.signal);
    const conn = await openSse(`http://127.0.0.1:${port}${STREAM}`, {
      Authorization: `Bearer ${await hsToken('shutdown-check')}`,
    });
    await until(() => hub.watcherCount === 1);
    expect(attachedTo(shutdown.signal)).toBe(baseline + 1);
    shutdown.abort(new Error('test shutdown'));
    await conn.ended;
    await until(() => hub.watcherCount === 0);
    expect(attachedTo(shutdown.signal)).toBe(baseline);
  });
});

describe('admin SSE watcher caps', () => {
  let svc: RunningNotificationApp;
  const API_TOKENS = { a: 'caps-token-service-a', b: 'caps-token-service-b' };

  beforeAll(async () => {
    svc = await startAdminService({
      inbox: { max_watchers_per_user: 2, max_watchers: 5 },
      server: {
        api_tokens: [
          { name: 'service-a', token: API_TOKENS.a, scopes: ['inbox:read'] },
          { name: 'service-b', token: API_TOKENS.b, scopes: ['inbox:read'] },
        ],
      },
    });
  });
  afterAll(() => svc.close());

  /** A WatchInbox of `userId` opened by the API caller holding `token`; its error, if it fails. */
  function watchInbox(userId: string, token: string) {
    const md = new Metadata();
    md.set('authorization', `Bearer ${token}`);
    const call = (
      svc.inboxGrpc.watchInbox as (r: unknown, md: Metadata) => grpc.ClientReadableStream<unknown>
    ).call(svc.inboxGrpc, { userId }, md);
    const error = new Promise<grpc.ServiceError>((resolve) => call.on('error', resolve));
    call.on('data', () => undefined);
    return { call, error };
  }

  it('beyond the caps a stream answers 429 with Retry-After, and the service stays healthy', async () => {
    const token = await hsToken('capped');
    const sessions = [
      await openSse(`${svc.baseUrl}${STREAM}`, { Authorization: `Bearer ${token}` }),
      await openSse(`${svc.baseUrl}${STREAM}`, { Authorization: `Bearer ${token}` }),
    ];
    await until(() => svc.app.inboxHub.watcherCount === 2);

    const refused = await openSse(`${svc.baseUrl}${STREAM}`, { Authorization: `Bearer ${token}` });
    await refused.ended;
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe(String(STREAM_RETRY_AFTER_SECONDS));
    expect(svc.app.inboxHub.watcherCount).toBe(2);

    const others = [
      await openSse(`${svc.baseUrl}${STREAM}`, { Authorization: `Bearer ${await hsToken('someone-else')}` }),
      await openSse(`${svc.baseUrl}${STREAM}`, { Authorization: `Bearer ${await hsToken('a-third-user')}` }),
      await openSse(`${svc.baseUrl}${STREAM}`, { Authorization: `Bearer ${await hsToken('a-fourth-user')}` }),
    ];
    await until(() => svc.app.inboxHub.watcherCount === 5);
    const overall = await openSse(`${svc.baseUrl}${STREAM}`, {
      Authorization: `Bearer ${await hsToken('a-fifth-user')}`,
    });
    await overall.ended;
    expect(overall.status).toBe(429);

    const health = await fetch(`${svc.baseUrl}/health`);
    expect(health.status).toBe(200);
    for (const c of [...sessions, ...others]) c.close();
    await until(() => svc.app.inboxHub.watcherCount === 0);
  });

  it("API callers' WatchInbox streams never take a user's own share: the user's page still opens, and each caller has its own", async () => {
    // Service A fills its share of bob's watches: its next one is refused.
    const a = [watchInbox('bob', API_TOKENS.a), watchInbox('bob', API_TOKENS.a)];
    await until(() => svc.app.inboxHub.watcherCount === 2);
    expect((await watchInbox('bob', API_TOKENS.a).error).code).toBe(grpcStatus.RESOURCE_EXHAUSTED);

    // Bob's own page (admin JWT) still opens, and service B still watches bob.
    const page = await openSse(`${svc.baseUrl}${STREAM}`, {
      Authorization: `Bearer ${await hsToken('bob')}`,
    });
    expect(page.status).toBe(200);
    const b = watchInbox('bob', API_TOKENS.b);
    await until(() => svc.app.inboxHub.watcherCount === 4);

    page.close();
    for (const w of [...a, b]) w.call.cancel();
    await until(() => svc.app.inboxHub.watcherCount === 0);
  });
});

describe('admin SSE and token expiry', () => {
  let svc: RunningNotificationApp;

  beforeAll(async () => {
    svc = await startAdminService();
  });
  afterAll(() => svc.close());

  it("when the token's exp passes, the stream sends an `expired` event and ends", async () => {
    const exp = Math.floor(Date.now() / 1000) + 2;
    const conn = await openSse(`${svc.baseUrl}${STREAM}`, {
      Authorization: `Bearer ${await hsToken('short-lived', { exp })}`,
    });
    expect(conn.status).toBe(200);
    await until(() => svc.app.inboxHub.watcherCount === 1);
    await conn.ended;
    const expired = conn.frames.filter((f: SseFrame) => f.event === 'expired');
    expect(expired).toHaveLength(1);
    expect(JSON.parse(expired[0]!.data!)).toMatchObject({ type: 'expired' });
    // It ended because of the token, not before: the exp had passed by then.
    expect(Date.now()).toBeGreaterThanOrEqual(exp * 1000);
    await until(() => svc.app.inboxHub.watcherCount === 0);
  });
});

describe('formatSseEvent', () => {
  it('writes `live` as an id line alone and `reset` as an event telling the page to reload', () => {
    const at = new Date('2026-11-23T00:00:00.000Z');
    expect(formatSseEvent({ cursor: '42', type: 'live', userId: 'u', unreadCount: 3, occurredAt: at })).toBe(
      'id: 42\n\n',
    );
    expect(formatSseEvent({ cursor: '57', type: 'reset', userId: 'u', unreadCount: 1, occurredAt: at })).toBe(
      `id: 57\nevent: reset\ndata: ${JSON.stringify({
        type: 'reset',
        message: null,
        message_id: null,
        unread_count: 1,
        occurred_at: at.toISOString(),
      })}\n\n`,
    );
  });
});
