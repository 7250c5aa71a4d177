import { ConfigError } from '../../../shared/config';
import {
  type MonitorConfigInput,
  getBackendConfig,
  loadMonitorConfig,
  makeMetricName,
  validateForEnvironment,
} from '../../../services/monitor/config';

function load(overrides?: Partial<MonitorConfigInput>, env: Record<string, string> = {}) {
  return loadMonitorConfig(overrides, { file: null, env });
}

/** A production config that raises no issue; each test breaks one thing. */
const hardenedProduction: Partial<MonitorConfigInput> = {
  environment: 'production',
  server: { api_tokens: ['<API_TOKEN>'] },
  tracing: { sample_rate: 0.1 },
  health: { auth_token: '<AUTH_TOKEN>' },
  metrics: { auth_token: '<AUTH_TOKEN>' },
  error_tracking: { dsn: 'https://public@errors.example.com/1' },
};

describe('MonitorConfig', () => {
  it('configure with nothing gives the defaults, with the noop backend and monitor ports', () => {
    const config = load();
    expect(config).toMatchObject({
      enabled: true,
      name: 'monitor',
      backend_type: 'noop',
      debug: false,
      server: { grpc_port: 50052, http_port: 8081 },
      database: { data_dir: './data/monitor' },
      metrics: { prefix: '', histogram_buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] },
      tracing: {
        sampler_type: 'probability',
        sample_rate: 1,
        propagation_formats: ['tracecontext', 'baggage'],
      },
      health: { enabled: true, path: '/health', include_details: true, timeout: 5, checks: [] },
      slo: {
        evaluation_interval_seconds: 60,
        suppression_window_seconds: 300,
        max_samples_per_metric: 10000,
        max_slos: 1000,
      },
      alerts: { digest_interval_seconds: 3600, channels: [] },
      error_tracking: { dsn: '', send_default_pii: false },
      opentelemetry: { compression: 'none' },
      pull_metrics: { port: 8000, path: '/metrics', store_in_db: false, metrics_table: 'metric_samples' },
      targets: [],
    });
  });

  it("refuses a DSN outside Sentry's grammar at load, naming the key but never the value", () => {
    // The SDK prints a DSN it cannot parse in full on stderr ("Invalid Sentry Dsn: ..."), key and all.
    const dsn = 'https://pub-lic-key-0123@errors.example.com/1';
    let error: unknown;
    try {
      load({ error_tracking: { dsn } });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(String((error as Error).message)).toContain('error_tracking.dsn');
    expect(String((error as Error).message)).not.toContain('pub-lic-key');
    expect(() =>
      load({ error_tracking: { dsn: 'https://public_key0123@errors.example.com/1' } }),
    ).not.toThrow();
  });

  it('normalises an SLO window written as text to seconds', () => {
    const config = load(undefined, {
      SVC_MONITOR__SLO__OBJECTIVES: JSON.stringify([
        { name: 'latency', metric: 'rpc_ms', threshold_ms: 200, window: '5m' },
      ]),
      SVC_MONITOR__SLO__OBJECTIVES__0__WINDOW: '1h30m',
    });
    expect(config.slo.objectives[0]).toMatchObject({
      window: 5400,
      burn_rate_threshold: 1,
      tier: 'P1_BUSINESS_HOURS',
    });
  });

  it('the slo section is the library schema plus the objectives: its bounds and max_slos apply', () => {
    const config = load({ slo: { suppression_window_seconds: '10m' } });
    expect(config.slo.suppression_window_seconds).toBe(600);
    expect(() => load({ slo: { max_samples_per_metric: 2_000_000 } })).toThrow(
      /monitor\.slo\.max_samples_per_metric: expected at most 1,000,000/,
    );
    const objective = (name: string) => ({ name, metric: 'm', threshold_ms: 1 });
    expect(() => load({ slo: { max_slos: 1, objectives: [objective('a'), objective('b')] } })).toThrow(
      /monitor\.slo\.objectives: at most max_slos \(1\) objectives/,
    );
  });

  it('the alerts section is the library schema (business hours checked)', () => {
    expect(load().alerts.business_hours).toMatchObject({ time_zone: 'UTC', open: '09:00', close: '17:00' });
    expect(() => load({ alerts: { business_hours: { time_zone: 'Mars/Olympus' } } })).toThrow(
      /monitor\.alerts\.business_hours\.time_zone: expected an IANA time zone/,
    );
  });

  it('rejects a duration that is not one', () => {
    expect(() =>
      load({ slo: { objectives: [{ name: 'l', metric: 'm', threshold_ms: 1, window: 'soon' }] } }),
    ).toThrow(/monitor\.slo\.objectives\[0\]\.window: expected a duration/);
  });

  it('rejects a sample rate above 1.0', () => {
    expect(() => load(undefined, { SVC_MONITOR__TRACING__SAMPLE_RATE: '1.5' })).toThrow(
      'monitor.tracing.sample_rate: expected a number between 0.0 and 1.0, got 1.5 (from environment variable SVC_MONITOR__TRACING__SAMPLE_RATE)',
    );
  });

  it('rejects a compression other than none or gzip', () => {
    expect(() => load({ opentelemetry: { compression: 'brotli' as 'gzip' } })).toThrow(
      /monitor\.opentelemetry\.compression: expected one of "none", "gzip", got "brotli"/,
    );
  });

  it('rejects a target with neither a gRPC address nor an HTTP URL', () => {
    expect(() => load({ targets: [{ name: 'notification' }] })).toThrow(ConfigError);
  });

  it('reads propagation formats from a comma-separated variable', () => {
    expect(
      load(undefined, { SVC_MONITOR__TRACING__PROPAGATION_FORMATS: 'b3,tracecontext' }).tracing
        .propagation_formats,
    ).toEqual(['b3', 'tracecontext']);
  });
});

describe('validateForEnvironment', () => {
  it('finds nothing to report in development', () => {
    expect(validateForEnvironment(load({ debug: true }))).toEqual([]);
  });

  it('finds nothing to report in a hardened production config', () => {
    expect(validateForEnvironment(load(hardenedProduction))).toEqual([]);
  });

  it('resolves the environment from the config when none is given, and uses the given one otherwise', () => {
    const config = load({ ...hardenedProduction, debug: true });
    expect(validateForEnvironment(config)).toEqual(['debug is on in production: set monitor.debug to false']);
    expect(validateForEnvironment(config, 'staging')).toEqual([]);
  });

  it('reports tracing that samples everything in production', () => {
    const issues = validateForEnvironment(load({ ...hardenedProduction, tracing: { sample_rate: 1.0 } }));
    expect(issues).toEqual([expect.stringContaining('sample_rate 1.0')]);
  });

  it('reports insecure OpenTelemetry export in production', () => {
    const issues = validateForEnvironment(
      load({ ...hardenedProduction, backend_type: 'opentelemetry', opentelemetry: { insecure: true } }),
    );
    expect(issues).toEqual([expect.stringContaining('opentelemetry.insecure')]);
  });

  it('reports open health and metrics endpoints and a missing dsn in production', () => {
    const issues = validateForEnvironment(
      load({
        environment: 'production',
        server: { allow_unauthenticated: true },
        tracing: { sample_rate: 0.1 },
      }),
    );
    expect(issues).toEqual([
      expect.stringContaining('health endpoint has no auth_token'),
      expect.stringContaining('metrics endpoint has no auth_token'),
      expect.stringContaining('error tracking has no dsn'),
    ]);
  });
});

describe('getBackendConfig', () => {
  it('returns the opentelemetry section for the opentelemetry backend', () => {
    const config = load({
      backend_type: 'opentelemetry',
      opentelemetry: { endpoint: 'http://collector:4318' },
    });
    expect(getBackendConfig(config)).toBe(config.opentelemetry);
  });

  it('returns the pull_metrics section for the pull_metrics backend', () => {
    const config = load({ backend_type: 'pull_metrics' });
    expect(getBackendConfig(config)).toBe(config.pull_metrics);
  });

  it('returns null for the memory and noop backends', () => {
    expect(getBackendConfig(load({ backend_type: 'memory' }))).toBeNull();
    expect(getBackendConfig(load({ backend_type: 'noop' }))).toBeNull();
  });
});

describe('makeMetricName', () => {
  it('prefixes the name when a prefix is configured', () => {
    expect(makeMetricName({ prefix: 'svc' }, 'calls_total')).toBe('svc_calls_total');
    expect(makeMetricName({ prefix: '' }, 'calls_total')).toBe('calls_total');
  });
});
