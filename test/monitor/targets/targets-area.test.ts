import { Registry } from 'prom-client';
import { ResourceExhaustedError } from '../../../shared/errors';
import { silentLogger } from '../../../shared/logging/logger';
import { MetricsCollector } from '../../../shared/monitoring/collector';
import type { AlertDispatcherProtocol } from '../../../shared/monitoring/alerts/dispatcher';
import { HealthChecker } from '../../../shared/monitoring/health/checker';
import { HealthStatus } from '../../../shared/monitoring/health/result';
import type { TargetConfig } from '../../../services/monitor/config';
import {
  MAX_TARGET_LISTENERS,
  probeTimeoutMs,
  TargetsArea,
} from '../../../services/monitor/targets/targets-area';
import type { TargetState } from '../../../services/monitor/targets/target-state';
import { waitFor } from '../../support/wait';
import { listen } from '../../shared/monitoring/helpers';
import { startHealthServer, type HealthServer } from './health-server';

interface SentAlert {
  title: string;
  severity: string;
  context: Record<string, unknown>;
}

/** An AlertDispatcherProtocol that keeps what it is given. */
function recordingDispatcher(): { dispatcher: AlertDispatcherProtocol; sent: SentAlert[] } {
  const sent: SentAlert[] = [];
  return {
    sent,
    dispatcher: {
      sendAlert: async (title, _message, severity, context) =>
        void sent.push({ title, severity, context: { ...context } }),
      sendMetricAlert: async () => undefined,
    },
  };
}

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function target(overrides: Partial<TargetConfig>): TargetConfig {
  // A short interval, but a timeout a loaded machine meets: a slow answer must not count as a failure.
  return { name: 'svc', interval_seconds: 0.05, timeout_ms: 5000, ...overrides };
}

function area(targets: TargetConfig[]): {
  area: TargetsArea;
  sent: SentAlert[];
  registry: Registry;
  seen: TargetState[];
} {
  const registry = new Registry();
  const { dispatcher, sent } = recordingDispatcher();
  const a = new TargetsArea({
    targets,
    alerts: dispatcher,
    collector: new MetricsCollector({ registry }),
    logger: silentLogger(),
  });
  const seen: TargetState[] = [];
  a.onChange((s) => seen.push(s));
  cleanups.push(() => a.stop());
  return { area: a, sent, registry, seen };
}

async function healthServer(): Promise<HealthServer> {
  const s = await startHealthServer();
  cleanups.push(() => s.stop());
  return s;
}

const states = (sent: SentAlert[]): unknown[] => sent.map((a) => a.context.state);

describe('TargetsArea', () => {
  it('uses timeout_ms, else the interval capped at 5 s', () => {
    expect(probeTimeoutMs({ name: 'a', interval_seconds: 1 })).toBe(1000);
    expect(probeTimeoutMs({ name: 'a', interval_seconds: 60 })).toBe(5000);
    expect(probeTimeoutMs({ name: 'a', interval_seconds: 60, timeout_ms: 250 })).toBe(250);
  });

  it('raises one "down" alert after two failed probes, and one "recovered" when the target answers again', async () => {
    const server = await healthServer();
    const { area: a, sent, seen } = area([target({ grpc_address: server.address })]);
    a.start();
    await waitFor(() => a.states()[0]!.up === true, 'target up');
    server.setStatus('NOT_SERVING');
    // Several failed probes after the second: still one alert.
    await waitFor(() => a.states()[0]!.consecutiveFailures >= 5, 'five failed probes');
    expect(states(sent)).toEqual(['down']);
    expect(sent[0]).toMatchObject({
      title: 'target svc is down',
      severity: 'high',
      context: { tier: 'P0_PAGE', target: 'svc', grpc_address: server.address, last_error: 'NOT_SERVING' },
    });
    // The down alert came with the second failure, not later.
    expect(sent[0]!.context.consecutive_failures).toBe(2);
    server.setStatus('SERVING');
    const checksAtRecovery = await new Promise<number>((resolve) => {
      const off = a.onChange((s) => {
        if (s.up) {
          off();
          resolve(server.checks);
        }
      });
    });
    await waitFor(() => server.checks >= checksAtRecovery + 3, 'three more probes');
    expect(states(sent)).toEqual(['down', 'recovered']);
    expect(sent[1]).toMatchObject({ severity: 'low', context: { state: 'recovered' } });
    expect(seen.length).toBeGreaterThanOrEqual(8);
  });

  it('raises no alert for a target that flaps within one failure', async () => {
    const server = await healthServer();
    const { area: a, sent } = area([target({ grpc_address: server.address })]);
    let failures = 0;
    let maxInARow = 0;
    // Each observed probe decides the next answer: fail once, then answer, again and again.
    a.onChange((s) => {
      maxInARow = Math.max(maxInARow, s.consecutiveFailures);
      if (s.consecutiveFailures === 1) {
        failures++;
        server.setStatus('SERVING');
      } else if (s.up) server.setStatus('NOT_SERVING');
    });
    a.start();
    await waitFor(() => failures >= 6, 'six single failures');
    expect(maxInARow).toBe(1);
    expect(sent).toEqual([]);
    expect(a.states()[0]!.up).toBe(true);
  });

  it('sees a stopped server as down and the server restarted on the same port as recovered', async () => {
    const server = await healthServer();
    const { area: a, sent } = area([target({ grpc_address: server.address })]);
    a.start();
    await waitFor(() => a.states()[0]!.up === true, 'target up');
    server.stop();
    await waitFor(() => sent.length === 1, 'the down alert');
    expect(a.states()[0]).toMatchObject({ up: false, lastError: 'UNAVAILABLE' });
    await server.restart();
    await waitFor(() => sent.length === 2, 'the recovered alert');
    expect(states(sent)).toEqual(['down', 'recovered']);
  });

  it('probes an HTTP target: a 503 is down, a 200 recovers it', async () => {
    let status = 200;
    const http = await listen((_req, res) => res.writeHead(status).end());
    cleanups.push(() => http.close());
    const { area: a, sent } = area([target({ name: 'web', http_url: `${http.url}/health` })]);
    a.start();
    await waitFor(() => a.states()[0]!.up === true, 'target up');
    status = 503;
    await waitFor(() => sent.length === 1, 'the down alert');
    expect(a.states()[0]!.lastError).toBe('HTTP 503');
    status = 200;
    await waitFor(() => sent.length === 2, 'the recovered alert');
    expect(states(sent)).toEqual(['down', 'recovered']);
  });

  it('with both kinds configured, is down when one of them fails', async () => {
    const server = await healthServer();
    const http = await listen((_req, res) => res.writeHead(500).end());
    cleanups.push(() => http.close());
    const { area: a, sent } = area([target({ grpc_address: server.address, http_url: http.url })]);
    a.start();
    await waitFor(() => sent.length === 1, 'the down alert');
    expect(a.states()[0]).toMatchObject({ up: false, lastError: 'HTTP 500' });
  });

  it('puts up{target} and the probe latency by kind on the registry; up is absent until known', async () => {
    const server = await healthServer();
    const { area: a, registry } = area([target({ name: 'api', grpc_address: server.address })]);
    expect(await registry.metrics()).not.toMatch(/^up\{/m);
    a.start();
    await waitFor(() => a.states()[0]!.up === true, 'target up');
    const text = await registry.metrics();
    expect(text).toMatch(/^up\{target="api"\} 1$/m);
    expect(text).toMatch(/^target_probe_duration_seconds_count\{target="api",kind="grpc"\} [1-9]\d*$/m);
  });

  it('gives each target a readiness check that is DEGRADED, never UNHEALTHY, while it is down', async () => {
    const server = await healthServer();
    const { area: a } = area([target({ name: 'api', grpc_address: server.address })]);
    const checker = new HealthChecker();
    a.addHealthChecks(checker);
    // Before the first probe: not known, so DEGRADED.
    expect((await checker.runReadiness()).checks['target.api']!.status).toBe(HealthStatus.DEGRADED);
    a.start();
    await waitFor(() => a.states()[0]!.up === true, 'target up');
    let report = await checker.runReadiness();
    expect(report.status).toBe(HealthStatus.HEALTHY);
    expect(report.checks['target.api']!.details).toMatchObject({
      target: 'api',
      up: true,
      grpc_address: server.address,
    });
    server.setStatus('NOT_SERVING');
    await waitFor(() => a.states()[0]!.up === false, 'target down');
    report = await checker.runReadiness();
    expect(report.status).toBe(HealthStatus.DEGRADED);
    expect(report.checks['target.api']).toMatchObject({
      status: HealthStatus.DEGRADED,
      error: 'NOT_SERVING',
    });
  });

  it('never shows the password of an http_url in its state (the alerts, health details and page read it)', () => {
    const { area: a } = area([target({ http_url: 'http://probe:s3cret@127.0.0.1:1/health' })]);
    expect(a.states()[0]!.httpUrl).toBe('http://probe:[REDACTED]@127.0.0.1:1/health');
    expect(JSON.stringify(a.states())).not.toContain('s3cret');
  });

  it('accepts at most MAX_TARGET_LISTENERS listeners; unsubscribing frees a place', () => {
    const { area: a } = area([target({ grpc_address: '127.0.0.1:1' })]);
    // area() added one already.
    const offs = Array.from({ length: MAX_TARGET_LISTENERS - 1 }, () => a.onChange(() => undefined));
    expect(() => a.onChange(() => undefined)).toThrow(ResourceExhaustedError);
    offs[0]!();
    expect(() => a.onChange(() => undefined)).not.toThrow();
  });

  it('keeps probing when a listener throws', async () => {
    const server = await healthServer();
    const { area: a } = area([target({ grpc_address: server.address })]);
    a.onChange(() => {
      throw new Error('listener bug');
    });
    a.start();
    await waitFor(() => server.checks >= 3, 'three probes');
  });

  it('stops probing on stop(): no probe runs afterwards', async () => {
    const server = await healthServer();
    const { area: a } = area([target({ grpc_address: server.address })]);
    a.start();
    await waitFor(() => server.checks >= 2, 'two probes');
    await a.stop();
    const after = server.checks;
    await new Promise((r) => setTimeout(r, 300));
    expect(server.checks).toBe(after);
  });

  it('stop() cancels a probe in flight instead of waiting out its timeout', async () => {
    const http = await listen(() => undefined);
    cleanups.push(() => http.close());
    const { area: a, seen } = area([
      target({ http_url: http.url, interval_seconds: 60, timeout_ms: 60_000 }),
    ]);
    a.start();
    await new Promise((r) => setTimeout(r, 50));
    await a.stop();
    // The cut-short probe is not recorded as a failure.
    expect(seen).toEqual([]);
    expect(a.states()[0]!.consecutiveFailures).toBe(0);
  });
});
