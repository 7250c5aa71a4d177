/**
 * `npm run bench`: every benchmark of the project, each printed as a ratio against a baseline
 * measured in the same run. Timings never go into tests; they live here.
 *
 * Usage: npm run bench [-- name-filter]     (a suite's name, or part of it: see `suites` below)
 */
import { createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { InboxService } from '../../shared/gen/svc/notification/v1/inbox_pb';
import { silentLogger } from '../../shared/logging/logger';
import { loadNotificationConfig } from '../../services/notification/config';
import { createNotificationApp } from '../../services/notification/app';
import { startCluster } from '../support/postgres-cluster';
import { runRpcKitBench } from './rpc-kit.bench';
import { runMonitoringBench } from './monitoring.bench';
import { runTracingBench } from './tracing.bench';
import { runInboxStoreBench } from './inbox-store.bench';
import { runAdminBench } from './admin.bench';
import { runInboxScaleBench } from './inbox-scale.bench';
import { runEmailBench } from './email.bench';
import { runSloBench } from './slo.bench';
import { runSmsBench } from './sms.bench';
import { runPushBench } from './push.bench';
import { runMonitorIngestBench } from './monitor-ingest.bench';
import { runTemplatesBench } from './templates.bench';
import { runNotifyBench } from './notify.bench';
import { runDigestBench } from './digest.bench';
import { runAlertsBench } from './alerts.bench';
import type { BenchRow } from './measure';

type Suite = { name: string; run: () => Promise<BenchRow[]> };

const suites: Suite[] = [
  { name: 'rpc-kit', run: () => runRpcKitBench() },
  { name: 'monitoring', run: () => runMonitoringBench() },
  // SLOMonitor.evaluate over 100 SLOs x 10,000 samples against a plain sort of the same samples.
  { name: 'slo', run: () => runSloBench() },
  // Span start+end through our Tracer against raw @opentelemetry/sdk-trace-base.
  { name: 'tracing', run: () => runTracingBench() },
  {
    name: 'inbox-store',
    async run() {
      const url = process.env.TEST_DATABASE_URL;
      if (url) return runInboxStoreBench(url);
      const cluster = await startCluster();
      try {
        return await runInboxStoreBench(cluster.url);
      } finally {
        cluster.stop();
      }
    },
  },
  {
    name: 'admin',
    async run() {
      const config = loadNotificationConfig(
        {
          server: { host: '127.0.0.1', grpc_port: 0, http_port: 0 },
          inbox: { store_backend: 'memory' },
          delivery: { store_backend: 'memory' },
        },
        { env: {}, file: null },
      );
      const app = await createNotificationApp(config, silentLogger());
      const ports = await app.start();
      const baseUrl = `http://127.0.0.1:${ports.http}`;
      try {
        const user = config.admin.auth.demo_user;
        for (let i = 0; i < 10; i++)
          await app.inbox.send({ userId: user, title: `message ${i}`, body: 'bench' });
        const token = new URL(await app.auth.demoLoginUrl(baseUrl)).hash.replace('#token=', '');
        const client = createClient(
          InboxService,
          createConnectTransport({ baseUrl, httpVersion: '1.1', useBinaryFormat: false }),
        );
        return await runAdminBench({
          gatewayBaseUrl: baseUrl,
          token,
          connectGetInbox: () => client.getInbox({ userId: user, pageSize: 10 }),
        });
      } finally {
        await app.stop();
      }
    },
  },
  // GetInbox/CountUnread on 1,000,000 rows (PostgreSQL) and WatchInbox fan-out to 2,000 streams.
  { name: 'inbox-scale', run: () => runInboxScaleBench() },
  // SendEmail into a local smtp-server against nodemailer behind a bare grpc-js hop (memory store,
  // PostgreSQL; nodemailer direct reported), and the durable enqueue against the raw grpc-js echo
  // (raw pg inserts reported).
  {
    name: 'email',
    async run() {
      const url = process.env.TEST_DATABASE_URL;
      if (url) return runEmailBench(url);
      const cluster = await startCluster();
      try {
        return await runEmailBench(cluster.url);
      } finally {
        cluster.stop();
      }
    },
  },
  // SMS/s through SendSms (64 in flight) against raw fetch to the same local Twilio-style API.
  { name: 'sms', run: () => runSmsBench() },
  // 10,000 APNs notifications: the driver's sendBatch and SendPushBatch end to end vs bare node:http2.
  { name: 'push', run: () => runPushBench() },
  // RecordMetrics over gRPC against protobuf-es + prom-client in one process; /metrics with 10,000
  // ingested series against prom-client rendering them.
  { name: 'monitor-ingest', run: () => runMonitorIngestBench() },
  // Our email render (fallback, store read, strict Liquid, cached parse) against raw LiquidJS.
  { name: 'notify-templates', run: () => runTemplatesBench() },
  // Notify to one user (inbox, email, SMS) against the three calls made directly; a topic of 10,000.
  { name: 'notify', run: () => runNotifyBench() },
  // Digests (issue 26): events/s into open digests on PostgreSQL against plain inserts of the same rows.
  {
    name: 'notify-digest',
    async run() {
      const url = process.env.TEST_DATABASE_URL;
      if (url) return runDigestBench(url);
      const cluster = await startCluster();
      try {
        return await runDigestBench(cluster.url);
      } finally {
        cluster.stop();
      }
    },
  },
  // SendAlert triggers/s with grouping, 100 silences and 20 inhibition rules against none (issue 27).
  { name: 'alerts', run: () => runAlertsBench() },
];

function fmt(n: number): string {
  return n >= 100 ? n.toFixed(0) : n >= 1 ? n.toFixed(2) : n.toPrecision(3);
}

async function main(): Promise<void> {
  const filter = process.argv[2];
  const rows: BenchRow[] = [];
  for (const suite of suites) {
    if (filter && !suite.name.includes(filter)) continue;
    process.stdout.write(`running ${suite.name}...\n`);
    rows.push(...(await suite.run()));
  }
  process.stdout.write('\n');
  for (const r of rows) {
    process.stdout.write(
      `${r.name}\n  value ${fmt(r.value)}${r.unit ? ` ${r.unit}` : ''}, baseline ${fmt(r.baseline)}, ratio ${r.ratio.toFixed(3)} (target ${r.target})\n`,
    );
    for (const line of r.detail ?? []) process.stdout.write(`  ${line}\n`);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(
      `bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
