/**
 * SLOs registered by RPC and their samples are kept in the monitor's database (issue 27): they
 * survive a restart, and monitors sharing one PostgreSQL answer for each other's writes. Config
 * objectives stay config.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { startMonitorOnDatabase, type RunningMonitorApp } from '../../support/monitor-app';
import { createTestDatabase } from '../../support/database';
import type { MonitorConfigInput } from '../../../services/monitor/config';
import { SloArea } from '../../../services/monitor/slo/slo-area';
import { MemorySloStateStore } from '../../../services/monitor/slo/store';
import { loadMonitorConfig } from '../../../services/monitor/config';
import { ManualClock } from '../../support/manual-clock';
import { listen } from '../../shared/monitoring/helpers';
import { until } from '../../support/wait';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { timestampMs } from '@bufbuild/protobuf/wkt';
import { AlertService, MatchOperator, TimelineEventKind } from '../../../shared/gen/svc/monitor/v1/alerts_pb';

let db: Awaited<ReturnType<typeof createTestDatabase>>;
const running: RunningMonitorApp[] = [];

beforeAll(async () => {
  db = await createTestDatabase('mon_slo_durable');
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});
afterAll(async () => {
  await db?.drop();
});

async function start(overrides: MonitorConfigInput = {}): Promise<RunningMonitorApp> {
  const m = await startMonitorOnDatabase(db.url, overrides);
  running.push(m);
  return m;
}

async function stop(m: RunningMonitorApp): Promise<void> {
  running.splice(running.indexOf(m), 1);
  await m.close();
}

const slo = (name: string, metric: string) => ({
  name,
  metric,
  percentile: 0.99,
  thresholdMs: 250,
  window: { seconds: 600n },
  description: 'Zahlung 💳 결제 دفع',
});

describe('SLOs in the monitor database', () => {
  it('an SLO registered by RPC and its samples survive a restart of the monitor', async () => {
    const a = await start();
    await a.monitorConnect.registerSlo({ slo: slo('restart-p99', 'restart.latency') });
    expect(
      (await a.monitorConnect.recordSloSamples({ metric: 'restart.latency', valuesMs: [100, 900] })).accepted,
    ).toBe(2);
    await stop(a);

    const b = await start();
    const listed = (await b.monitorConnect.listSlos({})).slos.find((s) => s.name === 'restart-p99');
    expect(listed).toMatchObject({
      metric: 'restart.latency',
      thresholdMs: 250,
      description: 'Zahlung 💳 결제 دفع',
    });
    const evaluated = await b.monitorConnect.evaluateSlos({ dispatch: false });
    const result = evaluated.violations.find((r) => r.slo?.name === 'restart-p99');
    expect(result).toMatchObject({ measuredValue: 900 });
  });

  it('monitors on one database answer for each other: register on one, record on the other, evaluate on the first', async () => {
    const a = await start();
    const b = await start();
    await a.monitorConnect.registerSlo({ slo: slo('replica-p99', 'replica.latency') });
    expect((await b.monitorConnect.listSlos({})).slos.map((s) => s.name)).toContain('replica-p99');
    // b learns of the SLO from the database, so it keeps the samples.
    expect(
      (await b.monitorConnect.recordSloSamples({ metric: 'replica.latency', valuesMs: [1000] })).accepted,
    ).toBe(1);
    const result = (await a.monitorConnect.evaluateSlos({ dispatch: false })).violations.find(
      (r) => r.slo?.name === 'replica-p99',
    );
    expect(result).toMatchObject({ measuredValue: 1000 });
    // The name is taken for every replica.
    const err = await b.monitorConnect
      .registerSlo({ slo: slo('replica-p99', 'other') })
      .catch((e: unknown) => e);
    expect(ConnectError.from(err).code).toBe(Code.AlreadyExists);
  });

  it("an alert sent by one replica suppresses the same SLO's alert on the other within the window", async () => {
    const a = await start();
    const b = await start();
    await a.monitorConnect.registerSlo({ slo: slo('suppressed-p99', 'suppressed.latency') });
    await a.monitorConnect.recordSloSamples({ metric: 'suppressed.latency', valuesMs: [2000] });
    const outcome = async (m: RunningMonitorApp) =>
      (await m.monitorConnect.evaluateSlos({ dispatch: true })).violations.find(
        (v) => v.slo?.name === 'suppressed-p99',
      )?.suppressed;
    expect(await outcome(a)).toBe(false);
    expect(await outcome(b)).toBe(true);
    expect(await outcome(a)).toBe(true);
  });

  it('a config objective with the name of a stored SLO wins; the stored one is not listed twice', async () => {
    const a = await start();
    await a.monitorConnect.registerSlo({ slo: slo('shadowed-p99', 'shadowed.latency') });
    await stop(a);
    const b = await start({
      slo: { objectives: [{ name: 'shadowed-p99', metric: 'shadowed.latency', threshold_ms: 4000 }] },
    });
    const listed = (await b.monitorConnect.listSlos({})).slos.filter((s) => s.name === 'shadowed-p99');
    expect(listed).toHaveLength(1);
    expect(listed[0]!.thresholdMs).toBe(4000);
  });
});

describe('the SLO evaluator on two monitors sharing one database', () => {
  it('runs once per interval between them: one evaluation per interval updates the SLO alert, one notification reaches the webhook', async () => {
    const posts: number[] = [];
    const hook = await listen((req, res) => {
      req.resume();
      req.on('end', () => {
        posts.push(Date.now());
        res.end();
      });
    });
    try {
      const config: MonitorConfigInput = {
        // Every evaluation of a violated SLO raises (no suppression); since issue 27's lifecycle the
        // raises of one SLO are one alert `slo:<name>` (a dedup key): each evaluation counts on it.
        slo: { evaluation_interval_seconds: 2, suppression_window_seconds: 0 },
        alerts: {
          channels: [
            { name: 'hook', type: 'webhook', tiers: ['P0_PAGE'], webhook: { url: `${hook.url}/in` } },
          ],
        },
      };
      const a = await start(config);
      const b = await start(config);
      await a.monitorConnect.registerSlo({ slo: { ...slo('lease-p99', 'lease.latency'), tier: 'P0_PAGE' } });
      await a.monitorConnect.recordSloSamples({ metric: 'lease.latency', valuesMs: [5000] });
      const alerts = createClient(
        AlertService,
        createConnectTransport({ baseUrl: b.baseUrl, httpVersion: '1.1' }),
      );
      const sloAlert = async () =>
        (
          await alerts.listAlerts({
            matchers: [{ name: 'alertname', operator: MatchOperator.EQUAL, value: 'lease-p99' }],
          })
        ).alerts;
      await until(
        async () => ((await sloAlert())[0]?.count ?? 0) >= 4,
        'four evaluations with an alert',
        60_000,
      );
      const [open, ...others] = await sloAlert();
      expect(others).toEqual([]);
      expect(open!.dedupKey).toBe('slo:lease-p99');
      const detail = (await alerts.getAlert({ alertId: open!.alert!.id })).alert!;
      // Each raise is in the timeline (triggered, then updated), stamped with the raising monitor's clock.
      const raised = detail.timeline
        .filter((t) => t.kind === TimelineEventKind.TRIGGERED || t.kind === TimelineEventKind.UPDATED)
        .map((t) => Number(timestampMs(t.at!)));
      expect(raised.length).toBeGreaterThanOrEqual(4);
      // Each monitor evaluating on its own would raise twice per interval; under the lease
      // consecutive evaluations are at least 1.8 s apart on the database's clock. The count over the
      // whole span is bounded (one per 1.8 s, plus one for the jitter of the two end points): a loaded
      // machine only makes evaluations later, never more, and one short gap between two stamps
      // (a raise delayed after its lease) does not add up over many.
      const span = raised[raised.length - 1]! - raised[0]!;
      expect(raised.length).toBeLessThanOrEqual(Math.floor(span / 1800) + 2);
      // The raises after the first update the open alert: one notification, not one per evaluation.
      expect(posts).toHaveLength(1);
    } finally {
      await Promise.all(running.splice(0).map((r) => r.close()));
      await hook.close();
    }
  });
});

describe('SloArea with a store', () => {
  it('purges the stored samples past the longest window of the SLOs reading their metric', async () => {
    const clock = new ManualClock();
    const store = new MemorySloStateStore(clock);
    const config = loadMonitorConfig({}, { env: {}, file: null }).slo;
    const area = new SloArea({
      config,
      alertDispatcher: { sendAlert: async () => undefined, sendMetricAlert: async () => undefined },
      clock,
      store,
    });
    await area.start();
    await area.registerSlo({
      name: 'short',
      metric: 'm',
      percentile: 0.9,
      thresholdMs: 10,
      windowSeconds: 60,
    });
    await area.registerSlo({
      name: 'long',
      metric: 'm',
      percentile: 0.9,
      thresholdMs: 10,
      windowSeconds: 120,
    });
    await area.record('m', [1]);
    clock.advance(100_000);
    await area.record('m', [2]);
    // 100 s old: inside the longer window, so kept.
    expect(await area.purge()).toBe(0);
    clock.advance(30_000);
    expect(await area.purge()).toBe(1);
    expect(Array.from((await store.windowSamples('m', 3600, 10)).valuesMs)).toEqual([2]);
  });
});
