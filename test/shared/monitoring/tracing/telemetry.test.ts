import { silentLogger } from '../../../../shared/logging/logger';
import { openTelemetryConfigSchema, tracingConfigSchema } from '../../../../shared/monitoring/config';
import { createTraceExporter, startTelemetry } from '../../../../shared/runtime/telemetry';
import { ConsoleSpanExporter } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';

function config(tracing: Record<string, unknown>) {
  return {
    tracing: tracingConfigSchema('svc').parse(tracing),
    opentelemetry: openTelemetryConfigSchema().parse({}),
  };
}

describe('startTelemetry', () => {
  it('does not start the SDK by default (exporter none)', () => {
    expect(config({}).tracing.exporter).toBe('none');
    expect(startTelemetry(config({}), silentLogger())).toBeNull();
  });

  it('does not start the SDK when tracing is disabled, whatever the exporter', () => {
    expect(startTelemetry(config({ enabled: false, exporter: 'otlp' }), silentLogger())).toBeNull();
  });

  it('builds the console and otlp span exporters the config names', () => {
    expect(createTraceExporter(config({ exporter: 'console' }))).toBeInstanceOf(ConsoleSpanExporter);
    expect(createTraceExporter(config({ exporter: 'otlp' }))).toBeInstanceOf(OTLPTraceExporter);
  });
});

describe('tracing config', () => {
  it.each([
    ['an unknown sampler_type', { sampler_type: 'sometimes' }],
    ['a sample_rate above 1', { sample_rate: 1.5 }],
    ['an unknown exporter', { exporter: 'zipkin' }],
    ['an unknown propagation format', { propagation_formats: ['jaeger'] }],
    ['max_spans 0', { max_spans: 0 }],
  ])('rejects %s', (_what, value) => {
    expect(tracingConfigSchema('svc').safeParse(value).success).toBe(false);
  });

  it('rejects an opentelemetry compression other than none and gzip', () => {
    expect(openTelemetryConfigSchema().safeParse({ compression: 'br' }).success).toBe(false);
  });
});
