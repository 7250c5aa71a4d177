/**
 * The sources' own resolution through the monitor running in-process: an SLO back within budget and
 * a watched target up again resolve their open alert (one resolved notification, in the log channel
 * here), instead of leaving it open.
 */
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';
import { AlertHub } from '../../../services/monitor/alerts/alert-hub';
import { loadMonitorConfig } from '../../../services/monitor/config';
import { SloArea } from '../../../services/monitor/slo/slo-area';
import { unary } from '../../support/grpc-clients';
import { captureLogger } from '../../shared/monitoring/helpers';
import { waitFor } from '../../support/wait';
import { startHealthServer, type HealthServer } from '../targets/health-server';

async function until(probe: () => Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const running: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const r of running.splice(0)) await r.close();
});

describe('a source resolves its own alert', () => {
  it('an SLO back within budget resolves the alert its violation opened (one alert for repeated violations)', async () => {
    const m: RunningMonitorApp = await startMonitorApp({ slo: { suppression_window_seconds: 0 } });
    running.push(m);
    const slo = {
      name: 'checkout-p99',
      metric: 'checkout.latency',
      percentile: 0.99,
      thresholdMs: 300,
      window: { seconds: 60n },
    };
    await unary(m.monitorGrpc, 'RegisterSlo', { slo });
    await unary(m.monitorGrpc, 'RecordSloSamples', { metric: 'checkout.latency', valuesMs: [900] });
    await unary(m.monitorGrpc, 'EvaluateSlos', { dispatch: true });
    await unary(m.monitorGrpc, 'EvaluateSlos', { dispatch: true });
    const lc = m.app.alerts.hub.lifecycle;
    const open = await lc.list(
      { matchers: [{ name: 'alertname', op: '=', value: 'checkout-p99' }] },
      undefined,
      10,
    );
    expect(open).toHaveLength(1);
    expect(open[0]).toMatchObject({ state: 'triggered', dedupKey: 'slo:checkout-p99', count: 2 });
    await unary(m.monitorGrpc, 'RecordSloSamples', {
      metric: 'checkout.latency',
      valuesMs: Array(400).fill(10),
    });
    await unary(m.monitorGrpc, 'EvaluateSlos', { dispatch: true });
    const after = await lc.get(open[0]!.alert.id);
    expect(after.entry).toMatchObject({ state: 'resolved', resolvedBy: 'slo' });
    // No channel configured: the service log, tier of the SLO (P1 by default).
    expect(after.timeline.filter((t) => t.kind === 'notified').map((t) => [t.actor, t.detail])).toEqual([
      ['service log', 'firing, tier P1_BUSINESS_HOURS'],
      ['service log', 'resolved, tier P1_BUSINESS_HOURS'],
    ]);
  });

  it('an SLO area that never saw the violation (a restart, another replica) still resolves the open alert when the SLO is within budget', async () => {
    const config = loadMonitorConfig({}, { env: {}, file: null });
    const hub = new AlertHub({
      router: { dispatch: async () => undefined, shutdown: async () => undefined },
      recentSize: 10,
      maxWatchers: 1,
      watchBufferSize: 8,
      defaultSource: 'monitor',
    });
    // Raised by the SLO before the restart: the key the hub gives SLO alerts.
    await hub.sendAlert('SLO violation: checkout-p99', 'too slow', 'high', { slo: 'checkout-p99' });
    const area = new SloArea({
      config: config.slo,
      alertDispatcher: hub,
      resolve: (key) => hub.resolve(key, 'slo'),
    });
    area.register({
      name: 'checkout-p99',
      metric: 'checkout.latency',
      percentile: 0.99,
      thresholdMs: 300,
      windowSeconds: 60,
    });
    area.recordSamples('checkout.latency', Array(200).fill(10));
    await area.evaluate(true);
    const [entry] = await hub.lifecycle.list(
      { matchers: [{ name: 'slo', op: '=', value: 'checkout-p99' }] },
      undefined,
      5,
    );
    expect(entry).toMatchObject({ state: 'resolved', resolvedBy: 'slo', dedupKey: 'slo:checkout-p99' });
  });

  it('a target up again resolves its "down" alert with one resolved notification saying it recovered', async () => {
    const target: HealthServer = await startHealthServer();
    running.push({ close: async () => target.stop() });
    const captured = captureLogger();
    const m = await startMonitorApp(
      {
        targets: [
          { name: 'notification', grpc_address: target.address, interval_seconds: 0.1, timeout_ms: 5000 },
        ],
      },
      captured.logger,
    );
    running.push(m);
    const lc = m.app.alerts.hub.lifecycle;
    const mine = { matchers: [{ name: 'target', op: '=' as const, value: 'notification' }] };
    await waitFor(() => m.app.targets.states()[0]?.up === true, 'the target up');
    target.setStatus('NOT_SERVING');
    await until(
      async () => (await lc.list({ ...mine, states: ['triggered'] }, undefined, 5)).length === 1,
      'the down alert',
    );
    target.setStatus('SERVING');
    await until(
      async () => (await lc.list({ ...mine, states: ['resolved'] }, undefined, 5)).length === 1,
      'the resolution',
    );
    const all = await lc.list(mine, undefined, 5);
    expect(all).toHaveLength(1);
    expect(all[0]).toMatchObject({ dedupKey: 'target:notification', resolvedBy: 'targets' });
    await m.app.alerts.hub.settled();
    const logged = captured.lines
      .filter((l) => l.event === 'alert' && (l.context as Record<string, unknown>)?.target === 'notification')
      .map((l) => (l.context as Record<string, unknown>).state);
    expect(logged).toEqual(['down', 'recovered']);
  });
});
