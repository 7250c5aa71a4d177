import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { ConsoleMetricExporter, type PushMetricExporter } from '@opentelemetry/sdk-metrics';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { OpenTelemetryBackend } from '../../../shared/monitoring/backends/opentelemetry';
import { BackendNotAvailableError } from '../../../shared/monitoring/errors';
import {
  MetricsExporterRegistry,
  otlpUrl,
  TracingExporterRegistry,
} from '../../../shared/monitoring/exporters';
import { listen, type TestServer } from './helpers';

describe('exporter registries', () => {
  it('withDefaults handles console and otlp metric exporters', () => {
    const registry = MetricsExporterRegistry.withDefaults();
    expect(registry.createExporter({ type: 'console' })).toBeInstanceOf(ConsoleMetricExporter);
    expect(registry.createExporter({ type: 'otlp', endpoint: 'http://127.0.0.1:4318' })).toBeInstanceOf(
      OTLPMetricExporter,
    );
  });

  it('withDefaults handles the otlp span exporter', () => {
    const registry = TracingExporterRegistry.withDefaults();
    expect(registry.createExporter({ type: 'otlp', endpoint: 'http://127.0.0.1:4318' })).toBeInstanceOf(
      OTLPTraceExporter,
    );
  });

  it('createExporter with no handler for the type returns undefined', () => {
    expect(MetricsExporterRegistry.withDefaults().createExporter({ type: 'zipkin' })).toBeUndefined();
  });

  it('register inserts at the head, so the newest handler for a type wins', () => {
    const mine = {} as PushMetricExporter;
    const registry = MetricsExporterRegistry.withDefaults().register({
      canHandle: (t) => t === 'console',
      createExporter: () => mine,
    });
    expect(registry.createExporter({ type: 'console' })).toBe(mine);
  });

  it('otlpUrl appends the signal path to a bare endpoint and keeps an explicit one', () => {
    expect(otlpUrl('http://collector:4318', 'metrics')).toBe('http://collector:4318/v1/metrics');
    expect(otlpUrl('http://collector:4318/custom', 'traces')).toBe('http://collector:4318/custom');
  });
});

describe('OpenTelemetryBackend', () => {
  let collector: TestServer | undefined;
  afterEach(async () => {
    await collector?.close();
    collector = undefined;
  });

  // The OTLP exporter loads `http` with a dynamic import(), which jest's VM refuses without
  // --experimental-vm-modules; so the backend runs in a child node process against a local collector.
  it('exports recorded metrics over OTLP/HTTP to the endpoint with the configured headers', async () => {
    const requests: Array<{ url?: string; auth?: string; body: string }> = [];
    collector = await listen((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        requests.push({ url: req.url, auth: req.headers['x-api-key'] as string | undefined, body });
        res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
      });
    });
    const fixtures = join(__dirname, 'fixtures');
    const code = await new Promise<number>((resolve) => {
      execFile(
        process.execPath,
        [
          '-r',
          join(fixtures, 'swc-register.js'),
          join(fixtures, 'otlp-export.ts'),
          collector!.url,
          'x-api-key=k1',
        ],
        { timeout: 30_000 },
        (err) => resolve(err ? ((err as { code?: number }).code ?? 1) : 0),
      );
    });
    expect(code).toBe(0);
    const first = requests[0]!;
    expect(first.url).toBe('/v1/metrics');
    expect(first.auth).toBe('k1');
    for (const name of ['deliveries', 'latency', 'queue', 'monitor']) expect(first.body).toContain(name);
  });

  it('uses the console exporter when no endpoint is configured', async () => {
    const dir = jest.spyOn(console, 'dir').mockImplementation(() => undefined);
    try {
      const backend = new OpenTelemetryBackend({ service_name: 'monitor' });
      await backend.initialize();
      backend.recordMetric('jobs', 1, 'counter');
      await backend.forceFlush();
      await backend.shutdown();
      expect(JSON.stringify(dir.mock.calls)).toContain('jobs');
    } finally {
      dir.mockRestore();
    }
  });

  it('recordMetric before initialize throws BackendNotAvailableError', () => {
    const backend = new OpenTelemetryBackend({ service_name: 'monitor' });
    expect(() => backend.recordMetric('jobs', 1, 'counter')).toThrow(BackendNotAvailableError);
  });

  it('export hands spans to the exporter from the tracing registry', async () => {
    const exported: unknown[] = [];
    const spanExporter: SpanExporter = {
      export: (spans, done) => {
        exported.push(...spans);
        done({ code: 0 });
      },
      shutdown: async () => undefined,
    };
    const tracing = new TracingExporterRegistry().register({
      canHandle: () => true,
      createExporter: () => spanExporter,
    });
    const metrics = new MetricsExporterRegistry();
    const backend = new OpenTelemetryBackend({
      service_name: 'monitor',
      tracing_exporter_registry: tracing,
      metrics_exporter_registry: metrics,
    });
    await backend.initialize();
    const span = { name: 'op' };
    await backend.export([span]);
    await backend.shutdown();
    expect(exported).toEqual([span]);
  });
});
