/**
 * The pull-metrics backend's parts on their own: its metrics server, the Pushgateway push, and the
 * migration that creates the samples table (run against real PostgreSQL), plus what the backend does
 * when that migration has not run. The backend as a whole is in pull-metrics.test.ts.
 */
import knexFactory, { type Knex } from 'knex';
import { Registry } from 'prom-client';
import * as prom from 'prom-client';
import { createTestDatabase } from '../../support/database';
import { runMigrations } from '../../../shared/storage/migrations';
import {
  startMetricsServer,
  stopMetricsServer,
} from '../../../shared/monitoring/backends/pull-metrics-server';
import { pushToGateway } from '../../../shared/monitoring/backends/push-gateway';
import { pullMetricsMigrations, pullMetricsMigrationsTable } from '../../../shared/monitoring/migrations';
import { PullMetricsBackend } from '../../../shared/monitoring/backends/pull-metrics';
import { MonitoringConfigError } from '../../../shared/monitoring/errors';
import { captureLogger, FakeTimers, listen } from './helpers';

describe('the pull-metrics server', () => {
  it('serves the handler on its path only, behind the token; a taken port warns and gives no server', async () => {
    const { logger, lines } = captureLogger();
    const server = await startMetricsServer({
      port: 0,
      host: '127.0.0.1',
      path: '/m',
      token: 'tok',
      handler: (_req, res) => res.end('ok'),
      logger,
    });
    try {
      const port = (server!.address() as { port: number }).port;
      expect((await fetch(`http://127.0.0.1:${port}/m`)).status).toBe(401);
      const ok = await fetch(`http://127.0.0.1:${port}/m`, { headers: { authorization: 'Bearer tok' } });
      expect(await ok.text()).toBe('ok');
      expect(
        (await fetch(`http://127.0.0.1:${port}/x`, { headers: { authorization: 'Bearer tok' } })).status,
      ).toBe(404);
      const second = await startMetricsServer({
        port,
        host: '127.0.0.1',
        path: '/m',
        token: null,
        handler: (_req, res) => res.end(),
        logger,
      });
      expect(second).toBeUndefined();
      expect(lines.some((l) => l.code === 'EADDRINUSE')).toBe(true);
    } finally {
      await stopMetricsServer(server);
    }
  });
});

describe('the Pushgateway push', () => {
  it('PUTs the registry under the job and reports a failure as false with a warning', async () => {
    const bodies: string[] = [];
    const ok = await listen((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        bodies.push(`${req.method} ${req.url}\n${body}`);
        res.end();
      });
    });
    const failing = await listen((_req, res) => res.writeHead(500).end());
    try {
      const registry = new Registry();
      new prom.Gauge({ name: 'depth', help: 'd', registers: [registry] }).set(3);
      const { logger, lines } = captureLogger();
      expect(await pushToGateway(prom, { url: ok.url, registry, jobName: 'job1', logger })).toBe(true);
      expect(bodies[0]).toMatch(/^PUT \/metrics\/job\/job1\n[\s\S]*depth 3/);
      expect(await pushToGateway(prom, { url: failing.url, registry, jobName: 'job1', logger })).toBe(false);
      expect(lines.some((l) => l.msg === 'push to Pushgateway failed')).toBe(true);
    } finally {
      await ok.close();
      await failing.close();
    }
  });
});

describe('the pull-metrics migration (PostgreSQL)', () => {
  let db: Knex;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const created = await createTestDatabase('pmm');
    drop = created.drop;
    db = knexFactory({ client: 'pg', connection: created.url, pool: { min: 0, max: 2 } });
  });

  afterAll(async () => {
    await db.destroy();
    await drop();
  });

  it('creates the samples table once (a second run applies nothing), per table, and drops it on down', async () => {
    const list = pullMetricsMigrations('samples_a');
    const options = { tableName: pullMetricsMigrationsTable('samples_a') };
    expect(await runMigrations(db, list, options)).toHaveLength(1);
    expect(await runMigrations(db, list, options)).toEqual([]);
    const columns = await db('samples_a').columnInfo();
    expect(Object.keys(columns).sort()).toEqual([
      'id',
      'labels',
      'metric_type',
      'name',
      'recorded_at',
      'value',
    ]);
    expect(columns.labels!.type).toBe('jsonb');
    const indexes = await db.raw(`SELECT indexdef FROM pg_indexes WHERE tablename = 'samples_a'`);
    expect(indexes.rows.map((r: { indexdef: string }) => r.indexdef).join('\n')).toContain(
      '(name, recorded_at)',
    );
    // Another table (a renamed metrics_table) has its own record, so it is migrated afresh.
    const b = { tableName: pullMetricsMigrationsTable('samples_b') };
    expect(await runMigrations(db, pullMetricsMigrations('samples_b'), b)).toHaveLength(1);
    expect(await db.schema.hasTable('samples_b')).toBe(true);
    await pullMetricsMigrations('samples_b')[0]!.down!(db);
    expect(await db.schema.hasTable('samples_b')).toBe(false);
    expect(await db.schema.hasTable('samples_a')).toBe(true);
  });

  it('names the record table per samples table, within PostgreSQL identifier length', () => {
    expect(pullMetricsMigrationsTable()).toBe('pull_metrics_migrations_metric_samples');
    const long = 'x'.repeat(63);
    const name = pullMetricsMigrationsTable(long);
    expect(name.length).toBeLessThanOrEqual(58);
    expect(name).not.toBe(pullMetricsMigrationsTable(`${'x'.repeat(62)}y`));
  });

  it('store_in_db without the migration run stops initialize with a clear error and creates nothing', async () => {
    const backend = new PullMetricsBackend({
      port: 0,
      host: '127.0.0.1',
      store_in_db: true,
      metrics_table: 'never_migrated',
      db,
      timers: new FakeTimers(),
    });
    const started = backend.initialize();
    await expect(started).rejects.toThrow(MonitoringConfigError);
    await expect(started).rejects.toThrow(/never_migrated.*pullMetricsMigrations/);
    await backend.shutdown();
    expect(await db.schema.hasTable('never_migrated')).toBe(false);
  });
});
