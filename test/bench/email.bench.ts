/**
 * Email benchmark (issue 10), against the notification service running as its own process
 * (`dist/services/notification/main.js`) so the client, the service and the SMTP peer share the two
 * cores as they would in use:
 *
 * 1. Throughput: emails per second through `SendEmail` over gRPC, 64 calls in flight, into a local
 *    smtp-server, counted at the peer (from the first call to the last message accepted). Baseline
 *    (issue 30): nodemailer's pooled transport (the same pool size as the service's backend) behind a
 *    bare grpc-js server in a process of its own (./grpc-hop-mailer.ts): the service's shape with
 *    nothing of the service inside. Memory store: target >= 0.9; database store on PostgreSQL:
 *    >= 0.65. The same rounds also measure nodemailer sending directly from this process, reported
 *    without a target: one gRPC hop alone reaches 0.65-0.72 of it on two cores, so a target against it
 *    measures the machine (test/bench/README.md). The three sides run in interleaved rounds.
 * 2. Durable enqueue: acknowledged `SendEmail`s per second with the peer paused (it holds every
 *    answer to DATA, so the service's few in-flight attempts hang and the rest stays queued: what is
 *    measured is the committed INSERT behind each acknowledgement). Baseline: the raw grpc-js unary
 *    echo (./raw-echo-server.ts) in a process of its own, same client loop, 64 in flight: the
 *    ceiling of any acknowledged call; target >= 0.7. Reported beside it: raw `pg` single-row INSERTs
 *    of the same rows (built beforehand) into a copy of the deliveries table, the same pool size and
 *    concurrency.
 *
 * Every measured round (not the warm-ups) also reads the CPU time of each process taking part (this
 * process, the service, the SMTP peer, the PostgreSQL server when it is local) and each row prints it
 * as CPU-ms per email per process, for both sides: on 2 shared cores the side that costs more CPU per
 * email cannot keep up, whatever else runs on the machine (./cpu-accounting.ts).
 *
 * Environment (for profiling; `npm run bench` sets neither):
 * - EMAIL_BENCH_ROWS=memory,postgres,enqueue: run only these rows (all by default).
 * - EMAIL_BENCH_SERVICE_NODE_OPTIONS=<flags>: NODE_OPTIONS of the service process (V8 tuning trials).
 * - EMAIL_BENCH_CPU_PROFILE=<dir>: CPU-profile every service process (cpu-profile-preload.ts); the
 *   profile is written to <dir>/<pid>.cpuprofile when the service exits.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { createTransport } from 'nodemailer';
import { Client, Pool } from 'pg';

import { Mailable, toOutboundEmail } from '../../services/notification/channels/email/mailable';
import { contentHash } from '../../services/notification/delivery/content-hash';
import { maskRecipient } from '../../services/notification/delivery/mask';
import {
  E2E_BACKEND,
  E2E_FROM,
  emailRequest,
  emailServiceEnv,
  notificationClient,
  sendEmails,
  type EmailStore,
} from '../support/email-service';
import { grpcClient, unary, type GenericClient } from '../support/grpc-clients';
import { sendAll } from '../support/send-all';
import { EchoService } from '../../shared/gen/svc/testing/v1/echo_pb';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';
import { startSmtpPeerProcess, type SmtpPeerProcess as SmtpPeer } from '../support/smtp-peer-process';
import {
  CpuTally,
  pidSource,
  postmasterPid,
  processTreeSource,
  selfSource,
  type CpuSource,
} from './cpu-accounting';
import { startGrpcHopMailer } from './grpc-hop-mailer';
import { median, type BenchRow } from './measure';
import { startRawEchoProcess } from './raw-echo-server';

const IN_FLIGHT = 64;
/** The service's smtp pool (`max_connections`, its default) and the baseline transport's. */
const POOL_SIZE = 5;
/** The service's `database.pool_max` default; the raw-insert baseline gets the same pool. */
const DB_POOL_SIZE = 10;
const EMAILS_PER_ROUND = 1000;
const ENQUEUES_PER_ROUND = 3000;
const ROUNDS = 3;
const ARRIVAL_TIMEOUT_MS = 120_000;

/** Resolves once the peer has accepted `count` messages in all; fails after ARRIVAL_TIMEOUT_MS. */
async function arrivals(peer: SmtpPeer, count: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${count} emails did not arrive in time`)), ARRIVAL_TIMEOUT_MS);
  });
  try {
    await Promise.race([peer.whenAccepted(count), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `round` accounted in `tally` under `side` (`units` of work per round), except its first call: the
 * warm-up of compareThroughput, with the JIT and the connections still warming.
 */
function accounted(
  tally: CpuTally,
  side: string,
  units: number,
  sources: CpuSource[],
  round: () => Promise<number>,
): () => Promise<number> {
  let calls = 0;
  return () => (calls++ === 0 ? round() : tally.measure(side, units, sources, round));
}

let round = 0;
/** `n` unique subjects for one round. */
function subjects(n: number): string[] {
  round++;
  return Array.from({ length: n }, (_, i) => `bench ${round}-${i}`);
}

/** Starts the service against `peer` with `store`; `extra` env on top. */
async function startService(
  peer: SmtpPeer,
  store: EmailStore,
  cwd: string,
  delivery: Record<string, number> = {},
): Promise<ServiceProcess> {
  const env = emailServiceEnv(peer.port, store, {
    smtp: { max_connections: POOL_SIZE, socket_timeout_ms: 600_000 },
    delivery,
  });
  const profileDir = process.env.EMAIL_BENCH_CPU_PROFILE;
  const nodeOptions = process.env.EMAIL_BENCH_SERVICE_NODE_OPTIONS;
  if (nodeOptions) env.NODE_OPTIONS = nodeOptions;
  if (profileDir) {
    env.NODE_OPTIONS = `${nodeOptions ?? ''} --require ${join(__dirname, 'cpu-profile-preload.js')}`;
    env.BENCH_CPU_PROFILE_DIR = profileDir;
  }
  return startServiceProcess('notification', env, { cwd, startTimeoutMs: 120_000 });
}

/** `err` with the end of the service's log, so a service that died says why. */
function withServiceLog(err: unknown, service: ServiceProcess): Error {
  const message = err instanceof Error ? err.message : String(err);
  const exit = service.child.exitCode ?? service.child.signalCode;
  return new Error(
    `${message}\nnotification process ${exit === null ? 'running' : `exited (${exit})`}, last log lines:\n` +
      service.logs.slice(-20).join('\n'),
  );
}

/**
 * Measures every side once (warm-up), then `rounds` rounds in which each side runs once in turn, and
 * answers each side's median: compareThroughput for more than two sides, so all of a row's
 * references are measured in the same run, interleaved.
 */
async function interleaved(
  sides: Record<string, () => Promise<number>>,
  rounds = ROUNDS,
): Promise<Record<string, number>> {
  const entries = Object.entries(sides);
  for (const [, run] of entries) await run();
  const seen: Record<string, number[]> = Object.fromEntries(entries.map(([name]) => [name, []]));
  for (let i = 0; i < rounds; i++) for (const [name, run] of entries) seen[name]!.push(await run());
  return Object.fromEntries(Object.entries(seen).map(([name, values]) => [name, median(values)]));
}

/** A row of `value` against `baseline` (ratio rounded to two places). */
function ratioRow(
  name: string,
  value: number,
  baseline: number,
  target: string,
  unit: string,
  detail: string[],
): BenchRow {
  return {
    name,
    value: Math.round(value),
    baseline: Math.round(baseline),
    ratio: Math.round((value / baseline) * 100) / 100,
    target,
    unit,
    detail,
  };
}

/**
 * SendEmail (service) into one peer against its two references, rounds interleaved: nodemailer
 * behind a bare gRPC server (./grpc-hop-mailer.ts: the service's shape without the service, the
 * targeted baseline) and nodemailer direct in this process (reported: see the README).
 */
async function throughputRows(
  peer: SmtpPeer,
  store: EmailStore,
  cwd: string,
  label: string,
  target: string,
): Promise<BenchRow[]> {
  const service = await startService(peer, store, cwd);
  const pgPid = typeof store === 'object' && 'url' in store ? await postmasterPid(store.url) : undefined;
  const common = [selfSource('bench'), pidSource('smtp-peer', peer.pid)];
  if (pgPid !== undefined) common.push(processTreeSource('postgres', pgPid));
  const tally = new CpuTally();
  const client = notificationClient(service.grpcPort);
  const hop = await startGrpcHopMailer(peer.port, POOL_SIZE, E2E_FROM);
  const hopClient = notificationClient(hop.grpcPort);
  const transport = createTransport({
    host: '127.0.0.1',
    port: peer.port,
    pool: true,
    maxConnections: POOL_SIZE,
    secure: false,
    ignoreTLS: true,
  });
  /** One round through `client`, counted at the peer. */
  const viaGrpc = async (through: GenericClient): Promise<number> => {
    const before = await peer.count();
    const started = performance.now();
    await sendEmails([through], subjects(EMAILS_PER_ROUND), IN_FLIGHT);
    await arrivals(peer, before + EMAILS_PER_ROUND);
    return EMAILS_PER_ROUND / ((performance.now() - started) / 1000);
  };
  const direct = async (): Promise<number> => {
    const before = await peer.count();
    const list = subjects(EMAILS_PER_ROUND);
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < list.length) {
          const req = emailRequest(list[next++]!) as { to: string[]; subject: string; text: string };
          await transport.sendMail({
            from: E2E_FROM,
            to: req.to,
            subject: req.subject,
            text: req.text,
            messageId: `<${randomUUID()}@example.com>`,
          });
        }
      }),
    );
    await arrivals(peer, before + EMAILS_PER_ROUND);
    return EMAILS_PER_ROUND / ((performance.now() - started) / 1000);
  };
  try {
    const r = await interleaved({
      service: accounted(
        tally,
        'service',
        EMAILS_PER_ROUND,
        [...common, pidSource('notification', service.child.pid)],
        () => viaGrpc(client),
      ),
      hop: accounted(tally, 'grpc-hop', EMAILS_PER_ROUND, [...common, pidSource('hop', hop.pid)], () =>
        viaGrpc(hopClient),
      ),
      direct: accounted(tally, 'nodemailer direct', EMAILS_PER_ROUND, common, direct),
    }).catch((err: unknown) => {
      throw withServiceLog(err, service);
    });
    const detail = tally.format('email');
    const name = (against: string) =>
      `email SendEmail -> smtp-server, ${label}, ${IN_FLIGHT} in flight (emails/s vs ${against})`;
    return [
      ratioRow(
        name(`nodemailer pool of ${POOL_SIZE} behind a bare grpc-js server`),
        r.service!,
        r.hop!,
        target,
        'emails/s',
        [...detail, ...tally.formatCpuRatio('service', 'grpc-hop')],
      ),
      ratioRow(name(`nodemailer pool of ${POOL_SIZE} direct`), r.service!, r.direct!, 'report', 'emails/s', [
        `(the bare grpc-js hop itself: ${(r.hop! / r.direct!).toFixed(2)} of nodemailer direct)`,
      ]),
    ];
  } finally {
    transport.close();
    client.close();
    hopClient.close();
    await hop.stop();
    await service.stop('SIGTERM', 5000);
  }
}

/** A deliveries row as the store writes it for one SendEmail, built before the clock starts. */
interface RawRow {
  recipient: string;
  masked: string;
  hash: string;
  payload: string;
}

function rawRows(n: number): RawRow[] {
  return subjects(n).map((subject) => {
    const req = emailRequest(subject) as { to: string[]; subject: string; text: string };
    const payload = toOutboundEmail(
      Mailable.of({ to: req.to, subject: req.subject, text: req.text }).build(),
      E2E_FROM,
    );
    const recipient = req.to.join(', ');
    return {
      recipient,
      masked: maskRecipient('email', recipient),
      hash: contentHash({ channel: 'email', backend: E2E_BACKEND, recipient, payload }),
      payload: JSON.stringify(payload),
    };
  });
}

/**
 * Acknowledged SendEmails with the peer paused against the raw grpc-js echo in a process of its own
 * (the ceiling of any acknowledged unary call: the target's baseline) and raw pg INSERTs of the same
 * rows (reported), rounds interleaved.
 */
async function enqueueRows(peer: SmtpPeer, url: string, cwd: string): Promise<BenchRow[]> {
  // Attempts that hang on the paused peer must not time out and be retried during the run: that
  // would add claims the baselines do not have.
  const service = await startService(peer, { url }, cwd, {
    attempt_timeout_ms: 600_000,
    lease_seconds: 700,
  });
  const client = notificationClient(service.grpcPort);
  const echo = await startRawEchoProcess();
  const echoClient = grpcClient(EchoService, echo.address);
  const pool = new Pool({ connectionString: url, max: DB_POOL_SIZE });
  const pgPid = await postmasterPid(url);
  const common = [selfSource('bench')];
  if (pgPid !== undefined) common.push(processTreeSource('postgres', pgPid));
  const tally = new CpuTally();
  // The scratch database is dropped WITH (FORCE) at the end: an idle client told so is no error.
  pool.on('error', () => undefined);
  await peer.pause();
  try {
    await pool.query('CREATE TABLE bench_raw_deliveries (LIKE deliveries INCLUDING ALL)');
    const viaService = async (): Promise<number> => {
      const started = performance.now();
      const { acked } = await sendEmails([client], subjects(ENQUEUES_PER_ROUND), IN_FLIGHT);
      return acked.length / ((performance.now() - started) / 1000);
    };
    // The same client loop and call helper as sendEmails, so both sides pay the same client costs.
    const viaEcho = async (): Promise<number> => {
      const started = performance.now();
      const { acked } = await sendAll(subjects(ENQUEUES_PER_ROUND), IN_FLIGHT, (message) =>
        unary(echoClient, 'echo', { message }, { deadlineMs: 30_000 }),
      );
      return acked.length / ((performance.now() - started) / 1000);
    };
    const raw = async (): Promise<number> => {
      const rows = rawRows(ENQUEUES_PER_ROUND);
      let next = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          while (next < rows.length) {
            const r = rows[next++]!;
            const now = new Date();
            await pool.query(
              `INSERT INTO bench_raw_deliveries (id, channel, backend, recipient, masked_recipient, scope,
                 content_hash, payload, status, next_attempt_at, created_at, updated_at)
               VALUES ($1, 'email', $2, $3, $4, '', $5, $6::jsonb, 'pending', $7, $7, $7)`,
              [randomUUID(), E2E_BACKEND, r.recipient, r.masked, r.hash, r.payload, now],
            );
          }
        }),
      );
      return rows.length / ((performance.now() - started) / 1000);
    };
    const r = await interleaved({
      service: accounted(
        tally,
        'service',
        ENQUEUES_PER_ROUND,
        [...common, pidSource('notification', service.child.pid)],
        viaService,
      ),
      echo: accounted(
        tally,
        'raw echo',
        ENQUEUES_PER_ROUND,
        [selfSource('bench'), pidSource('echo', echo.pid)],
        viaEcho,
      ),
      raw: accounted(tally, 'raw pg', ENQUEUES_PER_ROUND, common, raw),
    }).catch((err: unknown) => {
      throw withServiceLog(err, service);
    });
    const name = (against: string) =>
      `email SendEmail acknowledged with the peer paused (durable enqueue, PostgreSQL), ${IN_FLIGHT} in flight (calls/s vs ${against})`;
    return [
      ratioRow(name('raw grpc-js unary echo'), r.service!, r.echo!, '>= 0.7', 'calls/s', [
        ...tally.format('call'),
        ...tally.formatCpuRatio('service', 'raw echo'),
      ]),
      ratioRow(
        name(`raw pg single-row INSERT/s, pool of ${DB_POOL_SIZE}`),
        r.service!,
        r.raw!,
        'report',
        'calls/s',
        [],
      ),
    ];
  } finally {
    client.close();
    echoClient.close();
    await echo.stop();
    // The held attempts never finish: the service is killed, not drained (a profiled one is told
    // to write its profile first: cpu-profile-preload.ts).
    if (process.env.EMAIL_BENCH_CPU_PROFILE) {
      service.child.kill('SIGUSR2');
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
    await service.stop('SIGKILL', 1000);
    await peer.resume();
    await pool.end();
  }
}

/** A fresh database on the server at `serverUrl`, dropped after `run`. */
async function withScratchDatabase<T>(serverUrl: string, run: (url: string) => Promise<T>): Promise<T> {
  const name = `email_bench_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  try {
    return await run(url.toString());
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

/** Runs the email benchmark; `serverUrl` is any database on a PostgreSQL server (scratch ones are made). */
export async function runEmailBench(serverUrl: string): Promise<BenchRow[]> {
  // The relay runs in a process of its own: sharing the load generator's event loop, it would answer
  // late whenever the generator is busy (the gRPC client far more than nodemailer).
  const peer = await startSmtpPeerProcess();
  // An empty working directory: no local config file leaks into what is measured.
  const cwd = mkdtempSync(join(tmpdir(), 'email-bench-'));
  try {
    const rows: BenchRow[] = [];
    const add = (row: BenchRow): void => {
      rows.push(row);
      process.stdout.write(`  ${row.name}: ${row.value} vs ${row.baseline}, ratio ${row.ratio}\n`);
      for (const line of row.detail ?? []) process.stdout.write(`    ${line}\n`);
    };
    const only = process.env.EMAIL_BENCH_ROWS?.split(',');
    const wanted = (row: string): boolean => !only || only.includes(row);
    if (wanted('memory')) (await throughputRows(peer, 'memory', cwd, 'memory store', '>= 0.9')).forEach(add);
    if (wanted('postgres'))
      (
        await withScratchDatabase(serverUrl, (url) =>
          throughputRows(peer, { url }, cwd, 'database store on PostgreSQL', '>= 0.65'),
        )
      ).forEach(add);
    if (wanted('enqueue'))
      (await withScratchDatabase(serverUrl, (url) => enqueueRows(peer, url, cwd))).forEach(add);
    return rows;
  } finally {
    await peer.stop();
    rmSync(cwd, { recursive: true, force: true });
  }
}

// `node dist/test/bench/email.bench.js postgres://...` runs it alone.
if (require.main === module) {
  const url = process.argv[2];
  if (!url) {
    console.error('usage: email.bench <postgres-url>');
    process.exit(2);
  }
  runEmailBench(url).then(
    (result) => console.table(result),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
