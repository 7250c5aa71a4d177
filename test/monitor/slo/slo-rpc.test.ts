import { execFileSync } from 'node:child_process';
import * as grpc from '@grpc/grpc-js';
import { Registry } from 'prom-client';
import {
  type EvaluateSlosResponse,
  type ListSlosResponse,
  MonitorService,
  type RecordSloSamplesResponse,
  type RegisterSloResponse,
} from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import type { AlertContext, AlertDispatcherProtocol } from '../../../shared/monitoring/alerts/dispatcher';
import { silentLogger } from '../../../shared/logging/logger';
import { registration, RpcServer } from '../../../shared/rpc/server';
import { loadMonitorConfig } from '../../../services/monitor/config';
import { MonitorRpc } from '../../../services/monitor/rpc/monitor-rpc';
import { SloArea } from '../../../services/monitor/slo/slo-area';
import { grpcClient, type GenericClient, unary } from '../../support/grpc-clients';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';
import { waitFor } from '../../support/wait';

const running: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});

async function start(...args: Parameters<typeof startMonitorApp>): Promise<RunningMonitorApp> {
  const m = await startMonitorApp(...args);
  running.push(m);
  return m;
}

const checkout = {
  name: 'checkout-p99',
  metric: 'checkout.latency',
  percentile: 0.99,
  thresholdMs: 300,
  window: { seconds: 60n },
};

function register(client: GenericClient, slo: Record<string, unknown>) {
  return unary<RegisterSloResponse>(client, 'RegisterSlo', { slo });
}

async function rejection(p: Promise<unknown>): Promise<grpc.ServiceError> {
  try {
    await p;
  } catch (err) {
    return err as grpc.ServiceError;
  }
  throw new Error('expected the call to fail');
}

class RecordingDispatcher implements AlertDispatcherProtocol {
  readonly alerts: Array<{ title: string; severity: string; context: AlertContext }> = [];
  async sendAlert(title: string, _m: string, severity: string, context?: AlertContext | null) {
    this.alerts.push({ title, severity, context: context ?? {} });
  }
  async sendMetricAlert(): Promise<void> {}
}

describe('RegisterSlo and ListSlos over gRPC', () => {
  it('registers an SLO, returns it with defaults applied, and lists SLOs by name', async () => {
    const m = await start();
    const { response } = await register(m.monitorGrpc, {
      name: 'search-p95',
      metric: 'search',
      percentile: 0.95,
      thresholdMs: 80,
    });
    expect(response.slo).toMatchObject({
      name: 'search-p95',
      percentile: 0.95,
      thresholdMs: 80,
      burnRateThreshold: 1,
      tier: 'P1_BUSINESS_HOURS',
      window: expect.objectContaining({ seconds: 300n, nanos: 0 }),
    });
    await register(m.monitorGrpc, {
      ...checkout,
      burnRateThreshold: 1.5,
      tier: 'P0_PAGE',
      owner: 'team-pay',
      runbookUrl: 'https://runbooks.example/checkout',
      description: 'checkout stays fast',
    });
    const { response: list } = await unary<ListSlosResponse>(m.monitorGrpc, 'ListSlos', {});
    expect(list.slos.map((s) => s.name)).toEqual(['checkout-p99', 'search-p95']);
    expect(list.slos[0]).toMatchObject({
      burnRateThreshold: 1.5,
      tier: 'P0_PAGE',
      owner: 'team-pay',
      runbookUrl: 'https://runbooks.example/checkout',
      window: expect.objectContaining({ seconds: 60n }),
    });
    // Connect clients see the same list.
    expect((await m.monitorConnect.listSlos({})).slos.map((s) => s.name)).toEqual([
      'checkout-p99',
      'search-p95',
    ]);
  });

  it('answers a duplicate name with ALREADY_EXISTS and keeps the first', async () => {
    const m = await start();
    await register(m.monitorGrpc, checkout);
    const err = await rejection(register(m.monitorGrpc, { ...checkout, thresholdMs: 999 }));
    expect(err.code).toBe(grpc.status.ALREADY_EXISTS);
    expect(err.details).toContain('checkout-p99');
    const { response } = await unary<ListSlosResponse>(m.monitorGrpc, 'ListSlos', {});
    expect(response.slos.map((s) => s.thresholdMs)).toEqual([300]);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['no name', { name: '' }, 'name is required'],
    ['a blank name', { name: '   ' }, 'name must not be blank'],
    ['a name too long', { name: 'n'.repeat(129) }, 'name must be at most 128'],
    ['a name with a newline', { name: 'a\nb' }, 'control characters'],
    ['no metric', { metric: '' }, 'metric is required'],
    ['a metric too long', { metric: 'm'.repeat(257) }, 'metric must be at most 256'],
    ['percentile 0 (unset)', { percentile: 0 }, 'percentile must be greater than 0'],
    ['a negative percentile', { percentile: -0.5 }, 'percentile must be greater than 0'],
    ['percentile above 1', { percentile: 1.01 }, 'percentile must be between 0.0 and 1.0'],
    ['percentile NaN', { percentile: Number.NaN }, 'percentile'],
    ['threshold 0', { thresholdMs: 0 }, 'threshold_ms'],
    ['a negative threshold', { thresholdMs: -5 }, 'threshold_ms'],
    ['an infinite threshold', { thresholdMs: Number.POSITIVE_INFINITY }, 'threshold_ms'],
    ['a zero window', { window: { seconds: 0n } }, 'window'],
    ['a negative window', { window: { seconds: -10n } }, 'window'],
    ['a window over 30 days', { window: { seconds: 31n * 86400n } }, 'window must be at most'],
    ['a negative burn rate threshold', { burnRateThreshold: -1 }, 'burn_rate_threshold'],
    ['an unknown tier', { tier: 'P9_NEVER' }, 'unknown tier'],
    ['a runbook URL that is not http(s)', { runbookUrl: 'ftp://runbooks/x' }, 'runbook_url'],
    ['a runbook URL that is not a URL', { runbookUrl: 'see wiki' }, 'runbook_url'],
    ['a description too long', { description: 'd'.repeat(1025) }, 'description must be at most'],
    ['an owner too long', { owner: 'o'.repeat(257) }, 'owner must be at most'],
  ])(
    'answers %s with INVALID_ARGUMENT and a reason, registering nothing',
    async (_what, override, reason) => {
      const m = await start();
      const err = await rejection(register(m.monitorGrpc, { ...checkout, ...override }));
      expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err.details).toContain(reason);
      const { response } = await unary<ListSlosResponse>(m.monitorGrpc, 'ListSlos', {});
      expect(response.slos).toEqual([]);
    },
  );

  it('answers a request without an SLO with INVALID_ARGUMENT', async () => {
    const m = await start();
    const err = await rejection(unary(m.monitorGrpc, 'RegisterSlo', {}));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toContain('slo is required');
  });

  it('answers RESOURCE_EXHAUSTED beyond slo.max_slos, counting the objectives from config', async () => {
    const m = await start({
      slo: { max_slos: 2, objectives: [{ name: 'from-config', metric: 'cfg', threshold_ms: 10 }] },
    });
    await register(m.monitorGrpc, checkout);
    const err = await rejection(register(m.monitorGrpc, { ...checkout, name: 'third' }));
    expect(err.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(err.details).toContain('at most 2 SLOs');
    const { response } = await unary<ListSlosResponse>(m.monitorGrpc, 'ListSlos', {});
    expect(response.slos.map((s) => s.name)).toEqual(['checkout-p99', 'from-config']);
  });
});

describe('RecordSloSamples over gRPC', () => {
  it('records samples of a metric an SLO reads, and accepts none of a metric no SLO reads', async () => {
    const m = await start();
    await register(m.monitorGrpc, checkout);
    const kept = await unary<RecordSloSamplesResponse>(m.monitorGrpc, 'RecordSloSamples', {
      metric: 'checkout.latency',
      valuesMs: [1, 2, 3],
    });
    expect(kept.response.accepted).toBe(3);
    const unknown = await unary<RecordSloSamplesResponse>(m.monitorGrpc, 'RecordSloSamples', {
      metric: 'nobody.reads',
      valuesMs: [1],
    });
    expect(unknown.response.accepted).toBe(0);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['no metric', { metric: '', valuesMs: [1] }, 'metric is required'],
    [
      'a negative value at index 2',
      { metric: 'checkout.latency', valuesMs: [900, 900, -3, 900] },
      'sample [2]',
    ],
    ['NaN at index 0', { metric: 'checkout.latency', valuesMs: [Number.NaN, 900] }, 'sample [0]'],
    [
      'infinity at index 1',
      { metric: 'checkout.latency', valuesMs: [900, Number.POSITIVE_INFINITY] },
      'sample [1]',
    ],
    ['10,001 values', { metric: 'checkout.latency', valuesMs: new Array(10_001).fill(900) }, 'at most 10000'],
  ])('answers %s with INVALID_ARGUMENT and records nothing', async (_what, req, reason) => {
    const m = await start();
    await register(m.monitorGrpc, { ...checkout, percentile: 0.5 });
    const err = await rejection(unary(m.monitorGrpc, 'RecordSloSamples', req));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toContain(reason);
    // Nothing was recorded: the valid values (900 ms, three times the threshold) would breach it.
    const { response } = await unary<EvaluateSlosResponse>(m.monitorGrpc, 'EvaluateSlos', {});
    expect(response.violations).toEqual([]);
  });

  it('takes exactly 10,000 values', async () => {
    const m = await start();
    await register(m.monitorGrpc, checkout);
    const { response } = await unary<RecordSloSamplesResponse>(m.monitorGrpc, 'RecordSloSamples', {
      metric: 'checkout.latency',
      valuesMs: new Array(10_000).fill(1),
    });
    expect(response.accepted).toBe(10_000);
  });
});

describe('EvaluateSlos over gRPC', () => {
  it('finds nothing within bounds, then a violation with its figures once samples breach it', async () => {
    const m = await start();
    await register(m.monitorGrpc, checkout);
    await unary(m.monitorGrpc, 'RecordSloSamples', { metric: 'checkout.latency', valuesMs: [100, 120, 90] });
    expect(
      (await unary<EvaluateSlosResponse>(m.monitorGrpc, 'EvaluateSlos', {})).response.violations,
    ).toEqual([]);
    await unary(m.monitorGrpc, 'RecordSloSamples', { metric: 'checkout.latency', valuesMs: [600] });
    const { response } = await unary<EvaluateSlosResponse>(m.monitorGrpc, 'EvaluateSlos', {});
    expect(response.violations).toHaveLength(1);
    const v = response.violations[0]!;
    expect(v.slo?.name).toBe('checkout-p99');
    expect(v.measuredValue).toBe(600);
    expect(v.burnRate).toBe(2);
    expect(v.suppressed).toBe(false);
    expect(v.message).toContain('checkout-p99');
    expect(v.detectedAt).toBeDefined();
  });

  it('with dispatch, sends one alert and reports the second evaluation within the window as suppressed', async () => {
    const m = await start();
    await register(m.monitorGrpc, checkout);
    await unary(m.monitorGrpc, 'RecordSloSamples', { metric: 'checkout.latency', valuesMs: [900] });
    // What the monitor's alert hub raised (WatchAlerts and the channels get the same alerts).
    const alerts = () =>
      m.app.alerts.hub.recent(100).filter((a) => a.kind === 'slo' && a.alertName === 'checkout-p99');

    const first = await unary<EvaluateSlosResponse>(m.monitorGrpc, 'EvaluateSlos', { dispatch: true });
    expect(first.response.violations.map((v) => v.suppressed)).toEqual([false]);
    expect(alerts()).toHaveLength(1);

    const second = await unary<EvaluateSlosResponse>(m.monitorGrpc, 'EvaluateSlos', { dispatch: true });
    expect(second.response.violations.map((v) => v.suppressed)).toEqual([true]);
    expect(alerts()).toHaveLength(1);

    // Without dispatch nothing is sent and nothing is called suppressed.
    const third = await unary<EvaluateSlosResponse>(m.monitorGrpc, 'EvaluateSlos', {});
    expect(third.response.violations.map((v) => v.suppressed)).toEqual([false]);
    expect(alerts()).toHaveLength(1);
  });

  it('sends through the dispatcher the area is given: one alert, then suppressed (injected dispatcher)', async () => {
    const dispatcher = new RecordingDispatcher();
    const config = loadMonitorConfig({}, { env: {}, file: null });
    const area = new SloArea({ config: config.slo, alertDispatcher: dispatcher });
    area.start();
    const server = new RpcServer({
      name: 'slo-test',
      logger: silentLogger(),
      registry: new Registry(),
      host: '127.0.0.1',
      grpcPort: 0,
      httpPort: 0,
      apiTokens: [],
      maxRequestBytes: 4 * 1024 * 1024,
      shutdownDrainMs: 0,
      shutdownTimeoutMs: 2000,
      services: [registration(MonitorService, new MonitorRpc({ slo: area }))],
    });
    const ports = await server.start();
    const client = grpcClient(MonitorService, `127.0.0.1:${ports.grpc}`);
    running.push({ close: async () => (client.close(), await server.shutdown()) });

    await register(client, { ...checkout, tier: 'P0_PAGE' });
    await unary(client, 'RecordSloSamples', { metric: 'checkout.latency', valuesMs: [450] });
    const first = await unary<EvaluateSlosResponse>(client, 'EvaluateSlos', { dispatch: true });
    expect(first.response.violations.map((v) => v.suppressed)).toEqual([false]);
    expect(dispatcher.alerts).toEqual([
      {
        title: 'SLO violation: checkout-p99',
        severity: 'critical',
        context: expect.objectContaining({ slo: 'checkout-p99', tier: 'P0_PAGE', burn_rate: 1.5 }),
      },
    ]);
    const second = await unary<EvaluateSlosResponse>(client, 'EvaluateSlos', { dispatch: true });
    expect(second.response.violations.map((v) => v.suppressed)).toEqual([true]);
    expect(dispatcher.alerts).toHaveLength(1);
  });
});

describe('the SLO area in the running monitor', () => {
  it('registers slo.objectives at start, also from SVC_MONITOR__SLO__OBJECTIVES as JSON', async () => {
    const env = {
      SVC_MONITOR__SLO__OBJECTIVES: JSON.stringify([
        { name: 'api-p99', metric: 'api.latency', percentile: 0.99, threshold_ms: 250, window: '2m' },
        { name: 'db-p50', metric: 'db.latency', percentile: 0.5, threshold_ms: 5, tier: 'P2_DIGEST' },
      ]),
    };
    const config = loadMonitorConfig({}, { env, file: null });
    expect(config.slo.objectives.map((o) => o.name)).toEqual(['api-p99', 'db-p50']);
    const m = await start({ slo: { objectives: config.slo.objectives } });
    const { response } = await unary<ListSlosResponse>(m.monitorGrpc, 'ListSlos', {});
    expect(response.slos.map((s) => [s.name, s.thresholdMs, Number(s.window?.seconds), s.tier])).toEqual([
      ['api-p99', 250, 120, 'P1_BUSINESS_HOURS'],
      ['db-p50', 5, 300, 'P2_DIGEST'],
    ]);
    // A config SLO takes samples and is evaluated like any other.
    await unary(m.monitorGrpc, 'RecordSloSamples', { metric: 'db.latency', valuesMs: [50] });
    const ev = await unary<EvaluateSlosResponse>(m.monitorGrpc, 'EvaluateSlos', {});
    expect(ev.response.violations.map((v) => v.slo?.name)).toEqual(['db-p50']);
  });

  it('refuses a config objective with an unknown tier, naming the key', () => {
    const env = {
      SVC_MONITOR__SLO__OBJECTIVES: '[{"name":"bad","metric":"x","threshold_ms":1,"tier":"P7"}]',
    };
    expect(() => loadMonitorConfig({}, { env, file: null })).toThrow(
      /monitor\.slo\.objectives\[0\]\.tier: expected one of/,
    );
  });

  it('refuses to start with an objective the SLO rules reject, naming it', async () => {
    await expect(
      start({ slo: { objectives: [{ name: 'long', metric: 'x', threshold_ms: 1, window: '40d' }] } }),
    ).rejects.toThrow(/slo\.objectives\[0\] \(long\): window must be at most/);
  });

  it('the background worker dispatches violations without an EvaluateSlos call', async () => {
    const m = await start({ slo: { evaluation_interval_seconds: 1 } });
    await register(m.monitorGrpc, checkout);
    await unary(m.monitorGrpc, 'RecordSloSamples', { metric: 'checkout.latency', valuesMs: [1000] });
    await waitFor(
      () => m.app.alerts.hub.recent(100).some((a) => a.kind === 'slo' && a.alertName === 'checkout-p99'),
      'the worker to dispatch the violation',
    );
    // It is suppressed from now on: an explicit evaluation says so.
    const { response } = await unary<EvaluateSlosResponse>(m.monitorGrpc, 'EvaluateSlos', { dispatch: true });
    expect(response.violations.map((v) => v.suppressed)).toEqual([true]);
  });

  it('shows per-SLO burn rate, budget and samples on /metrics, promtool-clean', async () => {
    const m = await start();
    await register(m.monitorGrpc, { ...checkout, percentile: 0.9 });
    await register(m.monitorGrpc, { ...checkout, name: 'idle', metric: 'idle.latency' });
    await unary(m.monitorGrpc, 'RecordSloSamples', {
      metric: 'checkout.latency',
      valuesMs: [...new Array(95).fill(150), ...new Array(5).fill(400)],
    });
    await unary(m.monitorGrpc, 'EvaluateSlos', {});
    const body = await (await fetch(`${m.baseUrl}/metrics`)).text();
    expect(body).toMatch(/^slo_window_samples\{slo="checkout-p99"\} 100$/m);
    expect(body).toMatch(/^slo_burn_rate\{slo="checkout-p99"\} 0\.5$/m);
    const budget = /^slo_error_budget_remaining\{slo="checkout-p99"\} (\S+)$/m.exec(body);
    expect(Number(budget?.[1])).toBeCloseTo(0.5, 9); // 5% above 300 ms of the 10% allowed
    expect(body).toMatch(/^slo_window_samples\{slo="idle"\} 0$/m);
    expect(body).toMatch(/^slo_error_budget_remaining\{slo="idle"\} 1$/m);
    expect(body).toMatch(/^slo_evaluations_total 1$/m);
    expect(body).toMatch(/^slo_evaluation_failures_total 0$/m);
    expect(() =>
      execFileSync('promtool', ['check', 'metrics'], { input: body, stdio: 'pipe' }),
    ).not.toThrow();
  });
});
