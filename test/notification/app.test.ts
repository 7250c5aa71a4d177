import { silentLogger } from '../../shared/logging/logger';
import { createNotificationApp, type NotificationApp } from '../../services/notification/app';
import { loadNotificationConfig, type NotificationConfigInput } from '../../services/notification/config';
import { NOTIFICATION_MIGRATIONS_TABLE } from '../../services/notification/migrations';
import { createTestDatabase } from '../support/database';

const running: NotificationApp[] = [];

async function start(overrides: Partial<NotificationConfigInput> = {}) {
  const config = loadNotificationConfig(
    {
      ...overrides,
      server: { host: '127.0.0.1', grpc_port: 0, http_port: 0, shutdown_drain_ms: 0 },
      inbox: { store_backend: 'memory', ...overrides.inbox },
      delivery: { store_backend: 'memory', ...overrides.delivery },
    },
    { env: {}, file: null },
  );
  const app = await createNotificationApp(config, silentLogger());
  running.push(app);
  const ports = await app.start();
  return { app, base: `http://127.0.0.1:${ports.http}` };
}

afterEach(async () => {
  await Promise.all(running.splice(0).map((app) => app.stop()));
});

describe('the notification app: one storage root', () => {
  it('with the database store, opens the database once, runs every migration and hands it to the inbox', async () => {
    const db = await createTestDatabase('app');
    try {
      const { app } = await start({ database: { url: db.url }, inbox: { store_backend: 'database' } });
      const storage = app.storage!;
      expect(storage.engine).toBe('postgres');
      expect(storage.listenUrl).toBe(db.url);
      const migrated = await storage.knex(NOTIFICATION_MIGRATIONS_TABLE).select('name');
      expect(migrated.length).toBeGreaterThan(0);
      const sent = await app.inbox.send({ userId: 'u1', title: 't', body: 'b' });
      // The inbox writes through the app's connection: the row is visible on it.
      const rows = await storage.knex('inbox_messages').where({ id: sent.id });
      expect(rows).toHaveLength(1);
      await app.stop();
      // Stopping the app closes the pool it opened.
      await expect(storage.knex.raw('select 1')).rejects.toThrow();
    } finally {
      await db.drop();
    }
  });

  it('with memory stores only, opens no database at all', async () => {
    const { app } = await start();
    expect(app.storage).toBeUndefined();
  });

  it('when the database does not exist, creation fails with the driver error before anything listens', async () => {
    const db = await createTestDatabase('app');
    await db.drop();
    await expect(
      createNotificationApp(
        loadNotificationConfig(
          { database: { url: db.url }, server: { grpc_port: 0, http_port: 0 } },
          { env: {}, file: null },
        ),
        silentLogger(),
      ),
    ).rejects.toThrow(/does not exist/);
  });
});

describe('the notification app: health and metrics settings', () => {
  it('health.auth_token guards /health and its probes', async () => {
    const { base } = await start({ health: { auth_token: 'health-token' } });
    expect((await fetch(`${base}/health`)).status).toBe(401);
    expect((await fetch(`${base}/health/ready`)).status).toBe(401);
    const ok = await fetch(`${base}/health`, { headers: { authorization: 'Bearer health-token' } });
    expect(ok.status).toBe(200);
  });

  it('health.include_details false leaves out the per-check results', async () => {
    const { base } = await start({ health: { include_details: false } });
    const body = (await (await fetch(`${base}/health`)).json()) as Record<string, unknown>;
    expect(body.status).toBe('healthy');
    expect(body).not.toHaveProperty('checks');
  });

  it('by default /health includes the notifications.inbox check', async () => {
    const { base } = await start();
    const body = (await (await fetch(`${base}/health`)).json()) as { checks: Record<string, unknown> };
    expect(body.checks).toHaveProperty(['notifications.inbox']);
  });

  it('metrics.auth_token guards /metrics, and the admin routes are counted in http_requests_total', async () => {
    const { base } = await start({ metrics: { auth_token: 'scrape-token' } });
    expect((await fetch(`${base}/admin/notifications/inbox`)).status).toBe(401);
    expect((await fetch(`${base}/metrics`)).status).toBe(401);
    const res = await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer scrape-token' } });
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(
      /http_requests_total\{method="GET",route="\/admin\/notifications\/inbox",status="401"\} 1/,
    );
  });
});
