/**
 * The started monitor (in-process, real ports) watching a real gRPC health server: `up{target}` on
 * its /metrics, the target in CheckHealth and readiness, one alert per change in its log.
 */
import {
  type CheckHealthResponse,
  HealthCheckCategory,
  HealthStatus,
} from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { healthCheck, healthClient, unary } from '../../support/grpc-clients';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';
import { captureLogger, promtool } from '../../shared/monitoring/helpers';
import { startHealthServer, type HealthServer } from './health-server';

let target: HealthServer;
let monitor: RunningMonitorApp;
let lines: Array<Record<string, unknown>>;

beforeAll(async () => {
  target = await startHealthServer();
  const captured = captureLogger();
  lines = captured.lines;
  monitor = await startMonitorApp(
    {
      metrics: { prefix: 'mon' },
      targets: [
        // A timeout a loaded machine meets: a slow answer must not count as a failure here.
        { name: 'notification', grpc_address: target.address, interval_seconds: 0.1, timeout_ms: 5000 },
        // Nothing listens here: down from the start.
        { name: 'ghost', http_url: 'http://127.0.0.1:1/health', interval_seconds: 0.1 },
      ],
    },
    captured.logger,
  );
});
afterAll(async () => {
  await monitor?.close();
  target?.stop();
});

async function metrics(): Promise<string> {
  const res = await fetch(`${monitor.baseUrl}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

async function upValue(name: string): Promise<string | undefined> {
  return new RegExp(`^mon_up\\{target="${name}"\\} (\\S+)$`, 'm').exec(await metrics())?.[1];
}

async function until(what: string, probe: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const alerts = (target: string): unknown[] =>
  lines
    .filter((l) => l.event === 'alert' && (l.context as Record<string, unknown>)?.target === target)
    .map((l) => (l.context as Record<string, unknown>).state);

describe('the monitor watching targets', () => {
  it('flips up{target} 1 -> 0 -> 1 on /metrics and logs one alert per change', async () => {
    await until('up 1', async () => (await upValue('notification')) === '1');
    target.setStatus('NOT_SERVING');
    await until('up 0', async () => (await upValue('notification')) === '0');
    target.setStatus('SERVING');
    await until('up 1 again', async () => (await upValue('notification')) === '1');
    expect(alerts('notification')).toEqual(['down', 'recovered']);
    const down = lines.find((l) => l.event === 'alert' && l.alert === 'target notification is down')!;
    // The logging dispatcher's level rule: a high alert is an ERROR line (pino level 50).
    expect(down).toMatchObject({ level: 50, severity: 'high' });
  });

  it('exposes probe latency by target and kind, and valid exposition text', async () => {
    const text = await metrics();
    expect(text).toMatch(
      /^mon_target_probe_duration_seconds_count\{target="notification",kind="grpc"\} [1-9]/m,
    );
    expect(text).toMatch(/^mon_target_probe_duration_seconds_count\{target="ghost",kind="http"\} [1-9]/m);
    const check = promtool(text);
    expect(check.output).toBe('');
    expect(check.status).toBe(0);
  });

  it('shows each target in CheckHealth, a down one as DEGRADED', async () => {
    await until('ghost down', async () => (await upValue('ghost')) === '0');
    const { response } = await unary<CheckHealthResponse>(monitor.monitorGrpc, 'CheckHealth', {
      category: HealthCheckCategory.READINESS,
    });
    const byName = new Map(response.checks.map((c) => [c.component, c]));
    expect(byName.get('target.notification')).toMatchObject({ status: HealthStatus.HEALTHY, message: 'up' });
    expect(byName.get('target.ghost')).toMatchObject({
      status: HealthStatus.DEGRADED,
      message: 'down: ECONNREFUSED',
    });
    expect(byName.get('target.ghost')!.details).toMatchObject({ target: 'ghost', up: false });
    expect(response.status).toBe(HealthStatus.DEGRADED);
  });

  it('stays in rotation while a target is down: readiness 207, gRPC health SERVING', async () => {
    await until('ghost down', async () => (await upValue('ghost')) === '0');
    const ready = await fetch(`${monitor.baseUrl}/health/ready`);
    expect(ready.status).toBe(207);
    const body = (await ready.json()) as { checks: Record<string, { status: string }> };
    expect(body.checks['target.ghost']!.status).toBe('degraded');
    const client = healthClient(monitor.grpcAddress);
    try {
      expect(await healthCheck(client)).toBe('SERVING');
    } finally {
      client.close();
    }
  });

  it('raises exactly one alert for a target that is down from the start', () => {
    expect(alerts('ghost')).toEqual(['down']);
  });
});
