/**
 * Alert lifecycle benchmark (issue 27): `SendAlert` triggers per second over gRPC (grpc-js, 16 calls
 * in flight) into a monitor running in-process with grouping (`group_by: [cluster]`), 100 active
 * silences and 20 inhibition rules loaded, against the same triggers into a monitor with none, in the
 * same run (interleaved rounds). Every trigger is evaluated against all of it: the silences' matchers
 * (none matches, so nothing is muted and both sides keep every alert), and each rule whose target
 * matches (all 20 do: severity `warning`) looks up its firing sources. Target >= 0.7.
 */
import { silentLogger } from '../../shared/logging/logger';
import { MonitorService } from '../../shared/gen/svc/monitor/v1/monitor_pb';
import { createMonitorApp, type MonitorApp } from '../../services/monitor/app';
import { loadMonitorConfig, type MonitorConfigInput } from '../../services/monitor/config';
import { grpcClient, unary, type GenericClient } from '../support/grpc-clients';
import { compareThroughput, throughput, type BenchRow } from './measure';

const IN_FLIGHT = 16;
const ROUND_MS = 3000;
const SILENCES = 100;
const RULES = 20;
const HOSTS = 50;

interface Running {
  app: MonitorApp;
  client: GenericClient;
}

async function start(alerts: MonitorConfigInput['alerts']): Promise<Running> {
  const config = loadMonitorConfig(
    {
      server: { host: '127.0.0.1', grpc_port: 0, http_port: 0, shutdown_drain_ms: 0 },
      // Each trigger opens an alert: room for every round of both sides.
      alerts: { max_alerts_kept: 1_000_000, max_pending_dispatches: 100_000, ...alerts },
    },
    { env: {}, file: null },
  );
  const app = await createMonitorApp(config, silentLogger());
  const ports = await app.start();
  return { app, client: grpcClient(MonitorService, `127.0.0.1:${ports.grpc}`) };
}

/** Runs the alerts benchmark. */
export async function runAlertsBench(): Promise<BenchRow[]> {
  const loaded = await start({
    grouping: { group_by: ['cluster'], group_wait_seconds: 30, group_interval_seconds: 300 },
    inhibit_rules: Array.from({ length: RULES }, (_, i) => ({
      source_matchers: [`alertname="NodeDown-${i}"`],
      target_matchers: ['severity="warning"'],
      equal: ['host'],
    })),
  });
  const bare = await start({});
  try {
    const lc = loaded.app.alerts.hub.lifecycle;
    for (let i = 0; i < SILENCES; i++)
      await lc.createSilence({
        matchers: [
          { name: 'host', op: '=~', value: `maint-${i}-[0-9]+` },
          { name: 'cluster', op: '=', value: `c-${i % 5}` },
        ],
        startsAt: 0,
        endsAt: Date.now() + 24 * 3600_000,
        createdBy: 'bench@example.com',
        comment: `maintenance ${i}`,
      });
    let n = 0;
    const trigger = (r: Running) => () =>
      unary(r.client, 'sendAlert', {
        title: 'disk slow',
        message: `trigger ${n}`,
        severity: 'warning',
        sourceService: 'bench',
        context: { host: `h-${n++ % HOSTS}`, cluster: `c-${n % 5}`, tier: 'P2_DIGEST' },
      });
    const result = await compareThroughput(
      () => throughput(trigger(loaded), IN_FLIGHT, ROUND_MS),
      () => throughput(trigger(bare), IN_FLIGHT, ROUND_MS),
    );
    const open = await lc.list({ states: ['triggered'] }, undefined, 1);
    return [
      {
        name: `alerts: SendAlert triggers/s with grouping, ${SILENCES} silences, ${RULES} inhibition rules vs none`,
        value: result.value,
        baseline: result.baseline,
        ratio: result.ratio,
        target: '>= 0.7',
        unit: 'triggers/s',
        detail: [
          `${IN_FLIGHT} calls in flight over gRPC, ${ROUND_MS} ms rounds, memory store`,
          `groups open on the loaded monitor: ${lc.groupCount}; an alert kept: ${open.length === 1}`,
        ],
      },
    ];
  } finally {
    loaded.client.close();
    bare.client.close();
    await loaded.app.stop();
    await bare.app.stop();
  }
}
