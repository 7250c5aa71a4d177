import knexFactory, { type Knex } from 'knex';
import { createTestDatabase } from '../../support/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { pullMetricsMigrations, pullMetricsMigrationsTable } from '../../../shared/monitoring/migrations';
import {
  MAX_WARNED_KEYS,
  PullMetricsAdapter,
  PullMetricsBackend,
} from '../../../shared/monitoring/backends/pull-metrics';
import {
  BackendNotAvailableError,
  MetricLimitExceededError,
  MetricsClientUnavailableError,
  MonitoringConfigError,
} from '../../../shared/monitoring/errors';
import { metricsConfigSchema } from '../../../shared/monitoring/config';
import { absentPromClient } from '../../../shared/monitoring/prom-loader';
import { captureLogger, FakeTimers, listen, promtool, type TestServer } from './helpers';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function started(backend: PullMetricsBackend): Promise<PullMetricsBackend> {
  await backend.initialize();
  cleanups.push(() => backend.shutdown());
  return backend;
}

async function server(handler: Parameters<typeof listen>[0]): Promise<TestServer> {
  const s = await listen(handler);
  cleanups.push(() => s.close());
  return s;
}

describe('PullMetricsAdapter', () => {
  it('fixes label keys at first use; a later call omitting a key exports an empty string for it', async () => {
    const adapter = new PullMetricsAdapter();
    await adapter.counter('jobs', 1, { queue: 'mail', priority: 'high' });
    await adapter.counter('jobs', 2, { queue: 'sms' });
    expect(await adapter.registry!.metrics()).toContain('jobs_total{queue="sms",priority=""} 2');
  });

  it('drops a label key not known at first use and warns once', async () => {
    const { logger, lines } = captureLogger();
    const adapter = new PullMetricsAdapter({ logger });
    await adapter.gauge('depth', 1, { queue: 'mail' });
    await adapter.gauge('depth', 2, { queue: 'mail', extra: 'x' });
    await adapter.gauge('depth', 3, { queue: 'mail', extra: 'y' });
    expect(await adapter.registry!.metrics()).toContain('depth{queue="mail"} 3');
    expect(lines.filter((l) => l.msg === 'label not known at first use; dropped')).toHaveLength(1);
  });

  it('records counters, gauges and histograms by name with Prometheus-safe names', async () => {
    const adapter = new PullMetricsAdapter();
    await adapter.counter('mail.sent', 2);
    await adapter.gauge('queue.depth', 5);
    await adapter.histogram('send.seconds', 0.2);
    await adapter.flush();
    const text = await adapter.registry!.metrics();
    expect(text).toContain('mail_sent_total 2');
    expect(text).toContain('queue_depth 5');
    expect(text).toContain('send_seconds_count 1');
    expect(promtool(text)).toEqual({ status: 0, output: '' });
  });

  it('accepts max_metric_names names; the next new name is refused and counted, known names still record', async () => {
    const adapter = new PullMetricsAdapter({ max_metric_names: 3 });
    for (const name of ['a', 'b', 'c']) await adapter.counter(name, 1);
    await expect(adapter.counter('d', 1)).rejects.toThrow(MetricLimitExceededError);
    await expect(adapter.gauge('e', 1)).rejects.toThrow(MetricLimitExceededError);
    await adapter.counter('a', 4);
    expect(adapter.metricNameCount).toBe(3);
    expect(adapter.rejected).toEqual({ max_metric_names: 2, max_series_per_metric: 0 });
    const text = await adapter.registry!.metrics();
    expect(text).toContain('a_total 5');
    expect(text).not.toMatch(/^d_total/m);
    expect(text).toContain('pull_metrics_rejected_samples_total{reason="max_metric_names"} 2');
  });

  it('accepts max_series_per_metric label sets per name; the next new set is refused, known sets still record', async () => {
    const adapter = new PullMetricsAdapter({ max_series_per_metric: 2 });
    await adapter.counter('jobs', 1, { queue: 'a' });
    await adapter.counter('jobs', 1, { queue: 'b' });
    const refused = adapter.counter('jobs', 1, { queue: 'c' });
    await expect(refused).rejects.toThrow(MetricLimitExceededError);
    await expect(refused).rejects.toMatchObject({ code: 'RESOURCE_EXHAUSTED' });
    await adapter.counter('jobs', 1, { queue: 'a' });
    await adapter.counter('other', 1, { queue: 'c' });
    expect(adapter.rejected).toEqual({ max_metric_names: 0, max_series_per_metric: 1 });
    const text = await adapter.registry!.metrics();
    expect(text).toContain('jobs_total{queue="a"} 2');
    expect(text).not.toContain('jobs_total{queue="c"}');
    expect(text).toContain('pull_metrics_rejected_samples_total{reason="max_series_per_metric"} 1');
    expect(promtool(text)).toEqual({ status: 0, output: '' });
  });

  it('a refused name is cut in the error message, and the limit warning is logged once', async () => {
    const { logger, lines } = captureLogger();
    const adapter = new PullMetricsAdapter({ max_metric_names: 1, logger });
    await adapter.counter('first', 1);
    const long = 'x'.repeat(10_000);
    const err = await adapter.counter(long, 1).catch((e: unknown) => e as Error);
    await adapter.counter('again', 1).catch(() => undefined);
    expect((err as Error).message.length).toBeLessThan(200);
    expect(lines.filter((l) => l.msg === 'metric limit reached; samples refused')).toHaveLength(1);
  });

  it('remembers at most MAX_WARNED_KEYS distinct warnings, then says once that further ones are suppressed', async () => {
    const { logger, lines } = captureLogger();
    const adapter = new PullMetricsAdapter({ logger });
    await adapter.gauge('depth', 1, { queue: 'mail' });
    for (let i = 0; i < MAX_WARNED_KEYS + 50; i++) await adapter.gauge('depth', 1, { [`k${i}`]: 'x' });
    expect(lines.filter((l) => l.msg === 'label not known at first use; dropped')).toHaveLength(
      MAX_WARNED_KEYS,
    );
    expect(lines.filter((l) => String(l.msg).includes('further ones suppressed'))).toHaveLength(1);
  });

  it('the caps default to metrics.max_metric_names and max_series_per_metric of the config (1000 each)', () => {
    const metrics = metricsConfigSchema().parse(undefined);
    expect(metrics.max_metric_names).toBe(1000);
    expect(metrics.max_series_per_metric).toBe(1000);
    expect(() => metricsConfigSchema().parse({ max_metric_names: 0 })).toThrow();
  });

  it('metricsApp without the client library throws MetricsClientUnavailableError', () => {
    const adapter = new PullMetricsAdapter({ loader: absentPromClient });
    expect(() => adapter.metricsApp).toThrow(MetricsClientUnavailableError);
  });
});

describe('PullMetricsBackend', () => {
  it('constructed without its client library throws BackendNotAvailableError', () => {
    expect(() => new PullMetricsBackend({ loader: absentPromClient })).toThrow(BackendNotAvailableError);
  });

  it('passes its caps to the adapter: a recordMetric beyond max_metric_names is refused and not queued', async () => {
    const backend = new PullMetricsBackend({ max_metric_names: 1, max_series_per_metric: 1 });
    backend.recordMetric('one', 1, 'gauge', { k: 'a' });
    expect(() => backend.recordMetric('two', 1, 'gauge')).toThrow(MetricLimitExceededError);
    expect(() => backend.recordMetric('one', 1, 'gauge', { k: 'b' })).toThrow(MetricLimitExceededError);
    expect(backend.adapter.rejected).toEqual({ max_metric_names: 1, max_series_per_metric: 1 });
  });

  it('store_in_db without a database is a MonitoringConfigError', () => {
    expect(() => new PullMetricsBackend({ store_in_db: true })).toThrow(MonitoringConfigError);
  });

  it('serves its own metrics server on the configured port and path', async () => {
    const backend = await started(new PullMetricsBackend({ port: 0, host: '127.0.0.1' }));
    backend.recordMetric('deliveries', 3, 'counter', { channel: 'sms' });
    const res = await fetch(`http://127.0.0.1:${backend.port}/metrics`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('deliveries_total{channel="sms"} 3');
    expect((await fetch(`http://127.0.0.1:${backend.port}/other`)).status).toBe(404);
  });

  it('its metrics server honours auth_token', async () => {
    const backend = await started(new PullMetricsBackend({ port: 0, host: '127.0.0.1', auth_token: 'tok' }));
    expect((await fetch(`http://127.0.0.1:${backend.port}/metrics`)).status).toBe(401);
  });

  it('when the port is taken, logs a warning and keeps working', async () => {
    const occupied = await server((_req, res) => res.end());
    const { logger, lines } = captureLogger();
    const backend = await started(new PullMetricsBackend({ port: occupied.port, host: '127.0.0.1', logger }));
    backend.recordMetric('jobs', 1, 'counter');
    expect(backend.port).toBeUndefined();
    expect(lines.some((l) => l.level === 40 && l.code === 'EADDRINUSE')).toBe(true);
    expect(await backend.registry.metrics()).toContain('jobs_total 1');
  });

  it('metricsApp mounts at /metrics in another server', async () => {
    const backend = await started(new PullMetricsBackend({ port: 0, host: '127.0.0.1' }));
    backend.recordMetric('queue_depth', 7, 'gauge');
    const app = backend.metricsApp;
    const s = await server((req, res) => (req.url === '/metrics' ? app(req, res) : res.writeHead(404).end()));
    const res = await fetch(`${s.url}/metrics`);
    expect(res.headers.get('content-type')).toContain('version=0.0.4');
    expect(await res.text()).toContain('queue_depth 7');
  });

  it('with enable_default_metrics, the output includes process metrics and passes promtool', async () => {
    const backend = await started(
      new PullMetricsBackend({ port: 0, host: '127.0.0.1', enable_default_metrics: true }),
    );
    backend.recordMetric('latency_seconds', 0.1, 'histogram', { route: '/a' });
    const text = await (await fetch(`http://127.0.0.1:${backend.port}/metrics`)).text();
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(promtool(text)).toEqual({ status: 0, output: '' });
  });

  it('a metric type mismatch for a known name is dropped with a warning', async () => {
    const { logger, lines } = captureLogger();
    const backend = new PullMetricsBackend({ logger });
    backend.recordMetric('jobs', 1, 'counter');
    backend.recordMetric('jobs', 5, 'gauge');
    expect(await backend.registry.metrics()).toContain('jobs_total 1');
    expect(lines.some((l) => l.msg === 'metric type mismatch; dropped')).toBe(true);
  });

  it('createSpan returns a dummy span', () => {
    const span = new PullMetricsBackend().createSpan('op');
    span.setAttribute('k', 'v');
    span.end();
    expect(span.isEnded()).toBe(true);
    expect(span.getDuration()).toBeNull();
  });
});

describe('PullMetricsBackend push gateway', () => {
  it('pushes the registry with PUT to /metrics/job/<job> every push_interval', async () => {
    const received: Array<{ method?: string; url?: string; body: string }> = [];
    let gotOne: () => void = () => undefined;
    const arrival = new Promise<void>((r) => (gotOne = r));
    const gateway = await server((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push({ method: req.method, url: req.url, body });
        res.writeHead(200).end();
        gotOne();
      });
    });
    const timers = new FakeTimers();
    const backend = await started(
      new PullMetricsBackend({
        port: 0,
        host: '127.0.0.1',
        push_gateway_url: gateway.url,
        push_interval: 10,
        job_name: 'notification',
        timers,
      }),
    );
    backend.recordMetric('sent', 4, 'counter');
    timers.advance(9999);
    expect(received).toHaveLength(0);
    timers.advance(1);
    await arrival;
    expect(received[0]).toMatchObject({ method: 'PUT', url: '/metrics/job/notification' });
    expect(received[0]!.body).toContain('sent_total 4');
  });

  it('a failed push is logged and reported as false', async () => {
    const gateway = await server((_req, res) => res.writeHead(500).end('boom'));
    const { logger, lines } = captureLogger();
    const backend = new PullMetricsBackend({ push_gateway_url: gateway.url, logger });
    expect(await backend.pushNow()).toBe(false);
    expect(lines.some((l) => l.msg === 'push to Pushgateway failed')).toBe(true);
  });
});

describe('PullMetricsBackend store_in_db (PostgreSQL)', () => {
  let db: Knex;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const created = await createTestDatabase('mon');
    drop = created.drop;
    db = knexFactory({ client: 'pg', connection: created.url, pool: { min: 0, max: 2 } });
    // The composition root runs the library's migration before the backend starts.
    for (const table of ['metric_samples', 'metric_samples_2']) {
      await runMigrations(db, pullMetricsMigrations(table), { tableName: pullMetricsMigrationsTable(table) });
    }
  });

  afterAll(async () => {
    await db.destroy();
    await drop();
  });

  it('writes to metrics_table, made by its migration, and persists recorded samples', async () => {
    const timers = new FakeTimers();
    const backend = await started(
      new PullMetricsBackend({
        port: 0,
        host: '127.0.0.1',
        store_in_db: true,
        metrics_table: 'metric_samples',
        db,
        timers,
      }),
    );
    expect(await db.schema.hasTable('metric_samples')).toBe(true);
    backend.recordMetric('sent', 2, 'counter', { channel: 'email' });
    backend.recordMetric('depth', 5, 'gauge');
    expect(await backend.flushSamples()).toBe(2);
    const rows = await db('metric_samples').orderBy('id').select('name', 'metric_type', 'value', 'labels');
    expect(rows).toEqual([
      { name: 'sent', metric_type: 'counter', value: 2, labels: { channel: 'email' } },
      { name: 'depth', metric_type: 'gauge', value: 5, labels: {} },
    ]);
  });

  it('shutdown writes samples still pending', async () => {
    const backend = new PullMetricsBackend({
      port: 0,
      host: '127.0.0.1',
      store_in_db: true,
      metrics_table: 'metric_samples_2',
      db,
      timers: new FakeTimers(),
    });
    await backend.initialize();
    backend.recordMetric('late', 1, 'counter');
    await backend.shutdown();
    expect(await db('metric_samples_2').count<{ count: string }[]>('* as count')).toEqual([{ count: '1' }]);
  });
});
