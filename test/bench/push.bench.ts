/**
 * Push bench (issue 11): 10,000 APNs notifications to the local HTTP/2 APNs server.
 * - `sendBatch` of push_driver_b against a bare node:http2 client sending the same requests with the
 *   same concurrency on one session (target >= 0.8).
 * - `SendPushBatch` over gRPC end to end (memory store: records, worker, driver) until every
 *   delivery is SENT, against the same bare client (target >= 0.5).
 * - The same on PostgreSQL (issue 30, target >= 0.5), with the CPU-ms per notification of the bench
 *   process (service, peer and client share it) and of PostgreSQL.
 */
import * as http2 from 'node:http2';
import { performance } from 'node:perf_hooks';
import { silentLogger } from '../../shared/logging/logger';
import { loadJose } from '../../shared/auth/jose';
import { loadNotificationConfig } from '../../services/notification/config';
import { createNotificationApp } from '../../services/notification/app';
import { startCluster } from '../support/postgres-cluster';
import { ApnsDriver } from '../../services/notification/channels/push/apns-driver';
import { apnsBody } from '../../services/notification/channels/push/apns-driver';
import { PushDriverBConfigSchema } from '../../services/notification/channels/push/config';
import type { PushPayload } from '../../services/notification/channels/push/push-payload';
import { NotificationService } from '../../shared/gen/svc/notification/v1/notification_pb';
import { ecKeys, startApnsPeer, type ApnsPeer } from '../notification/channels/push/push-peers';
import { grpcClient, unary } from '../support/grpc-clients';
import { compareThroughput, type BenchRow } from './measure';
import { CpuTally, postmasterPid, processTreeSource, selfSource, type CpuSource } from './cpu-accounting';

// PUSH_BENCH_N shrinks the run for a quick look; the figures are for 10,000.
const N = Number(process.env.PUSH_BENCH_N ?? 10_000);
const CONCURRENCY = 100;
const KEY_ID = 'BENCHKEY01';
const TEAM_ID = 'BENCHTEAM1';
const TOPIC = 'com.example.bench';

const payloads: PushPayload[] = Array.from({ length: N }, (_, i) => ({
  deviceToken: i.toString(16).padStart(64, '0'),
  title: 'Bench',
  body: `notification ${i}`,
}));

/** The bare client: one session, CONCURRENCY streams in flight, the same headers and bodies. */
async function bare(peer: ApnsPeer, jwt: string): Promise<number> {
  const session = http2.connect(peer.baseUrl);
  const t0 = performance.now();
  let next = 0;
  const lane = async () => {
    while (next < N) {
      const p = payloads[next++]!;
      await new Promise<void>((resolve, reject) => {
        const stream = session.request({
          ':method': 'POST',
          ':path': `/3/device/${p.deviceToken}`,
          authorization: `bearer ${jwt}`,
          'apns-topic': TOPIC,
          'apns-push-type': 'alert',
          'content-type': 'application/json',
        });
        stream.on('response', () => undefined);
        stream.on('data', () => undefined);
        stream.on('end', () => resolve());
        stream.on('error', reject);
        stream.end(apnsBody(p));
      });
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  const rate = N / ((performance.now() - t0) / 1000);
  session.close();
  return rate;
}

/** Runs the push bench suite. */
export async function runPushBench(): Promise<BenchRow[]> {
  const keys = ecKeys();
  const peer = await startApnsPeer({
    publicKey: keys.publicKey,
    keyId: KEY_ID,
    teamId: TEAM_ID,
    topic: TOPIC,
  });
  peer.record = false;
  const settings = {
    key_id: KEY_ID,
    team_id: TEAM_ID,
    private_key: keys.privatePem,
    topic: TOPIC,
    base_url: peer.baseUrl,
    max_concurrent_streams: CONCURRENCY,
  };
  const jose = await loadJose();
  const jwt = await new jose.SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: KEY_ID })
    .setIssuer(TEAM_ID)
    .setIssuedAt()
    .sign(await jose.importPKCS8(keys.privatePem, 'ES256'));
  const driver = new ApnsDriver({
    name: 'bench',
    config: PushDriverBConfigSchema.parse(settings),
    logger: silentLogger(),
  });

  // The service under test, with its delivery store in memory or on PostgreSQL.
  const startApp = async (database?: string) => {
    const config = loadNotificationConfig(
      {
        server: { host: '127.0.0.1', grpc_port: 0, http_port: 0, max_request_bytes: 16 * 1024 * 1024 },
        inbox: { store_backend: 'memory' },
        ...(database ? { database: { url: database } } : {}),
        delivery: {
          store_backend: database ? 'database' : 'memory',
          concurrency: CONCURRENCY,
          poll_interval_ms: 50,
          max_batch_size: N,
        },
        push_backends: [{ name: 'apns', driver: 'push_driver_b', push_driver_b: settings }],
      },
      { env: {}, file: null },
    );
    const app = await createNotificationApp(config, silentLogger());
    const ports = await app.start();
    return { app, client: grpcClient(NotificationService, `127.0.0.1:${ports.grpc}`) };
  };
  const { app, client } = await startApp();
  const messages = payloads.map((p) => ({ deviceToken: p.deviceToken, title: p.title, body: p.body }));
  let round = 0;
  try {
    const batch = await compareThroughput(
      async () => {
        const t0 = performance.now();
        const outcomes = await driver.sendBatch(payloads, {
          deliveryId: 'bench',
          attempt: 1,
          signal: new AbortController().signal,
        });
        const rate = N / ((performance.now() - t0) / 1000);
        if (outcomes.some((o) => o.class !== 'sent')) throw new Error('a bench notification was not sent');
        return rate;
      },
      () => bare(peer, jwt),
    );
    process.stdout.write(`  sendBatch: ratio ${batch.ratio.toFixed(3)}\n`);
    const endToEnd = (
      target: { app: typeof app; client: typeof client },
      tally?: CpuTally,
      sources?: CpuSource[],
    ) => {
      let warm = false;
      // CPU of every round but the warm-up, per notification, per side.
      const counted = (side: string, round: () => Promise<number>) => async () => {
        if (!tally || !sources || !warm) return round();
        return tally.measure(side, N, sources, round);
      };
      return compareThroughput(
        counted('service', async () => {
          const before = peer.answered;
          const t0 = performance.now();
          // A fresh key per round: the same key would return the first round's deliveries.
          await unary(target.client, 'sendPushBatch', { messages, idempotencyKey: `bench-${round++}` });
          while (peer.answered - before < N) await new Promise((r) => setTimeout(r, 5));
          await target.app.deliveries.worker.idle();
          return N / ((performance.now() - t0) / 1000);
        }),
        counted('bare', async () => {
          const rate = await bare(peer, jwt);
          warm = true;
          return rate;
        }),
      );
    };
    const e2e = await endToEnd({ app, client });
    // The same with the database store on PostgreSQL (reported): one commit per batch, group-committed outcomes.
    const cluster = process.env.TEST_DATABASE_URL ? undefined : await startCluster();
    const dbUrl = process.env.TEST_DATABASE_URL ?? cluster!.url;
    const db = await startApp(dbUrl);
    const tally = new CpuTally();
    const sources = [selfSource('bench process'), processTreeSource('postgres', await postmasterPid(dbUrl))];
    let e2eDb;
    try {
      e2eDb = await endToEnd(db, tally, sources);
    } finally {
      db.client.close();
      await db.app.stop();
      cluster?.stop();
    }
    return [
      {
        name: `push: APNs sendBatch of ${N} vs bare node:http2 (${CONCURRENCY} streams)`,
        ...batch,
        target: '>= 0.8',
        unit: 'notifications/s',
      },
      {
        name: `push: SendPushBatch of ${N} over gRPC end to end (memory store) vs bare node:http2`,
        ...e2e,
        target: '>= 0.5',
        unit: 'notifications/s',
      },
      {
        name: `push: SendPushBatch of ${N} over gRPC end to end (database store on PostgreSQL) vs bare node:http2`,
        ...e2eDb,
        target: '>= 0.5',
        unit: 'notifications/s',
        detail: [...tally.format('notification'), ...tally.formatCpuRatio('service', 'bare')],
      },
    ];
  } finally {
    client.close();
    await driver.close();
    await app.stop();
    await peer.close();
  }
}
