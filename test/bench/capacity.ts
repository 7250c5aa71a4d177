/**
 * `npm run capacity` (issue 30): what one message costs, measured, not estimated. For each channel
 * on the PostgreSQL store, the notification service runs as its own process against a throwaway
 * PostgreSQL cluster with production durability (fsync and full-page writes on) and
 * pg_stat_statements loaded; N messages go through it (64 calls in flight) until every one is
 * final at the local provider stand-in, and the run reads, per message:
 *
 * - statements: the service's statements (pg_stat_statements calls of the service's role and
 *   database; this script's own probes run as another role, in another database);
 * - PostgreSQL CPU-ms: CPU time of the server's whole process tree (backends, WAL writer,
 *   checkpointer, autovacuum);
 * - WAL bytes: the distance the WAL insert position moved;
 * - service CPU-ms: CPU time of the notification process.
 *
 * The same numbers over an idle stretch of the same length say what the service costs with nothing
 * to do (polls, leases, LISTEN). deploy/capacity.md turns them into a model.
 *
 * CAPACITY_AUTO_EXPLAIN_MS=n logs the plans of statements slower than n ms to the cluster's server.log.
 * Usage: npm run capacity [-- rows] (rows: a comma list of email,sms,push,push-batch,inbox,notify;
 * all by default). `npm run capacity -- replicas` runs replicas.ts instead (N replicas claiming from
 * one queue, dueBackends on a large backlog, the event sequencer under N writers). CAPACITY_MESSAGES=N sets the messages per row (default 2000). Prints a table and
 * writes test-artifacts/capacity.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';

import { InboxService } from '../../shared/gen/svc/notification/v1/inbox_pb';
import { NotificationService } from '../../shared/gen/svc/notification/v1/notification_pb';
import { NotifyService } from '../../shared/gen/svc/notification/v1/notify_pb';
import { TemplateChannel, TemplateService } from '../../shared/gen/svc/notification/v1/templates_pb';
import { UserService } from '../../shared/gen/svc/notification/v1/users_pb';
import { ecKeys, startApnsPeer } from '../notification/channels/push/push-peers';
import { gatewayConfig, startTwilioPeer } from '../notification/channels/sms/twilio-peer';
import { grpcClient, unary, type GenericClient } from '../support/grpc-clients';
import { startCluster } from '../support/postgres-cluster';
import { sendAll } from '../support/send-all';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';
import { startSmtpPeerProcess } from '../support/smtp-peer-process';
import { cpuMark, pidSource, postmasterPid, processTreeSource } from './cpu-accounting';
import { printPartitions, runPartitions } from './partitions';
import { runReplicasCommand } from './replicas';

const IN_FLIGHT = 64;
const MESSAGES = Number(process.env.CAPACITY_MESSAGES ?? 2000);
const BATCH = 1000;
const SERVICE_DB = 'capacity_service';
const PROBE_ROLE = 'capacity_probe';
const ROWS = ['email', 'sms', 'push', 'push-batch', 'inbox', 'notify'] as const;
type RowName = (typeof ROWS)[number];

/** One measured row. */
export interface CapacityRow {
  row: string;
  messages: number;
  seconds: number;
  statementsPerMessage: number;
  pgCpuMsPerMessage: number;
  walBytesPerMessage: number;
  serviceCpuMsPerMessage: number;
  /** The same over an idle stretch as long as the row: per second, not per message. */
  idle?: {
    statementsPerSecond: number;
    pgCpuMsPerSecond: number;
    serviceCpuMsPerSecond: number;
    /**
     * Where PostgreSQL's idle time went: the service's statements that ran longest over the idle
     * stretch (execution ms, calls) and the longest single statement seen running (sampled every
     * 250 ms). An idle replica should cost a few ms/s; this names the culprit when it does not.
     */
    busiest: { query: string; ms: number; calls: number }[];
    longestRunning?: { query: string; ms: number };
  };
}

/** The first 160 characters of a statement, on one line. */
function shortQuery(query: string): string {
  return query.replace(/\s+/g, ' ').trim().slice(0, 160);
}

interface Probe {
  /** Statements the service has run so far. */
  statements(): Promise<number>;
  /** Bytes of WAL written so far. */
  walBytes(): Promise<bigint>;
  /** Deliveries in `status` in the service's database. */
  countDeliveries(statuses: string[]): Promise<number>;
  countInbox(): Promise<number>;
  /** Execution time so far per statement of the service (pg_stat_statements), by query text. */
  statementTimes(): Promise<Map<string, { calls: number; ms: number }>>;
  /** The service's statements running now, with how long each has run (ms). */
  running(): Promise<{ query: string; ms: number }[]>;
  close(): Promise<void>;
}

async function openProbe(serverUrl: string): Promise<Probe> {
  const url = new URL(serverUrl);
  url.username = PROBE_ROLE;
  const admin = new Client({ connectionString: url.toString() });
  await admin.connect();
  const inService = new URL(url);
  inService.pathname = `/${SERVICE_DB}`;
  const service = new Client({ connectionString: inService.toString() });
  await service.connect();
  const one = async (client: Client, sql: string, params: unknown[] = []): Promise<string> =>
    String(Object.values((await client.query(sql, params)).rows[0] as object)[0] ?? '0');
  return {
    statements: async () =>
      Number(
        await one(
          admin,
          `SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s
            JOIN pg_database d ON d.oid = s.dbid JOIN pg_roles r ON r.oid = s.userid
           WHERE d.datname = $1 AND r.rolname = 'postgres'`,
          [SERVICE_DB],
        ),
      ),
    walBytes: async () =>
      BigInt(await one(admin, `SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint`)),
    countDeliveries: async (statuses) =>
      Number(await one(service, 'SELECT count(*) FROM deliveries WHERE status = ANY($1)', [statuses])),
    countInbox: async () => Number(await one(service, 'SELECT count(*) FROM inbox_messages')),
    statementTimes: async () => {
      const { rows } = await admin.query<{ query: string; calls: string; ms: number }>(
        `SELECT s.query, sum(s.calls) AS calls, sum(s.total_exec_time) AS ms FROM pg_stat_statements s
          JOIN pg_database d ON d.oid = s.dbid JOIN pg_roles r ON r.oid = s.userid
         WHERE d.datname = $1 AND r.rolname = 'postgres' GROUP BY s.query`,
        [SERVICE_DB],
      );
      return new Map(rows.map((r) => [r.query, { calls: Number(r.calls), ms: Number(r.ms) }]));
    },
    running: async () =>
      (
        await admin.query<{ query: string; ms: number }>(
          `SELECT query, extract(epoch FROM clock_timestamp() - query_start) * 1000 AS ms
             FROM pg_stat_activity
            WHERE datname = $1 AND usename = 'postgres' AND state = 'active' AND pid <> pg_backend_pid()`,
          [SERVICE_DB],
        )
      ).rows.map((r) => ({ query: r.query, ms: Number(r.ms) })),
    close: async () => {
      await service.end();
      await admin.end();
    },
  };
}

/** Waits until `done()` holds, polling every 100 ms, for at most ten minutes. */
async function until(what: string, done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 600_000;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`capacity: gave up waiting for ${what}`);
    await sleep(100);
  }
}

/** Runs the capacity measurement; returns the rows. */
export async function runCapacity(rows: readonly RowName[] = ROWS): Promise<CapacityRow[]> {
  // CAPACITY_AUTO_EXPLAIN_MS=n: statements (nested ones too: the SQL functions' insides) slower than
  // n ms get their plan, with row counts and buffers, in the cluster's server.log.
  const explainMs = process.env.CAPACITY_AUTO_EXPLAIN_MS;
  const cluster = await startCluster({
    durable: true,
    settings: {
      shared_preload_libraries: explainMs ? 'pg_stat_statements,auto_explain' : 'pg_stat_statements',
      'pg_stat_statements.track': 'all',
      ...(explainMs
        ? {
            'auto_explain.log_min_duration': explainMs,
            'auto_explain.log_analyze': 'on',
            'auto_explain.log_buffers': 'on',
            'auto_explain.log_timing': 'off',
            'auto_explain.log_nested_statements': 'on',
          }
        : {}),
    },
  });
  const cwd = mkdtempSync(join(tmpdir(), 'capacity-'));
  const smtp = await startSmtpPeerProcess();
  const twilio = await startTwilioPeer({ record: false });
  const keys = ecKeys();
  const apns = await startApnsPeer({
    publicKey: keys.publicKey,
    keyId: 'KEY1234567',
    teamId: 'TEAM123456',
    topic: 'com.example.app',
  });
  apns.record = false;
  let service: ServiceProcess | undefined;
  let probe: Probe | undefined;
  const clients: GenericClient[] = [];
  try {
    const setup = new Client({ connectionString: cluster.url });
    await setup.connect();
    await setup.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await setup.query(`CREATE ROLE ${PROBE_ROLE} SUPERUSER LOGIN`);
    await setup.query(`CREATE DATABASE ${SERVICE_DB}`);
    await setup.end();
    const serviceUrl = new URL(cluster.url);
    serviceUrl.pathname = `/${SERVICE_DB}`;

    const config = {
      notification: {
        server: { host: '127.0.0.1', grpc_port: 0, http_port: 0, max_request_bytes: 16 * 1024 * 1024 },
        database: { url: serviceUrl.toString() },
        inbox: { store_backend: 'database' },
        delivery: { store_backend: 'database', concurrency: IN_FLIGHT, max_batch_size: BATCH },
        mailer: {
          backends: [
            {
              name: 'relay',
              driver: 'smtp',
              from_email: 'noreply@example.com',
              smtp: { host: '127.0.0.1', port: smtp.port, pool: true },
            },
          ],
        },
        sms_backends: [
          { name: 'gateway', sms_gateway: gatewayConfig(twilio, { max_connections: IN_FLIGHT }) },
        ],
        push_backends: [
          {
            name: 'apns',
            driver: 'push_driver_b',
            push_driver_b: {
              key_id: 'KEY1234567',
              team_id: 'TEAM123456',
              private_key: keys.privatePem,
              topic: 'com.example.app',
              base_url: apns.baseUrl,
              max_concurrent_streams: IN_FLIGHT,
            },
          },
        ],
        notify: { categories: [{ name: 'alerts', channels: ['inbox', 'email', 'sms'], required: true }] },
      },
    };
    const configFile = join(cwd, 'capacity.yaml');
    writeFileSync(configFile, JSON.stringify(config));
    service = await startServiceProcess(
      'notification',
      { SVC_CONFIG_FILE: configFile },
      { cwd, startTimeoutMs: 120_000 },
    );
    const address = `127.0.0.1:${service.grpcPort}`;
    const notifications = grpcClient(NotificationService, address);
    const inbox = grpcClient(InboxService, address);
    const notify = grpcClient(NotifyService, address);
    const templates = grpcClient(TemplateService, address);
    const users = grpcClient(UserService, address);
    clients.push(notifications, inbox, notify, templates, users);
    probe = await openProbe(cluster.url);
    const pgPid = await postmasterPid(cluster.url);
    if (pgPid === undefined) throw new Error('capacity: the PostgreSQL postmaster pid cannot be read');
    const sources = [processTreeSource('postgres', pgPid), pidSource('service', service.child.pid)];

    // Notify's setup: templates for each channel and one user per message (a user's own rows).
    if (rows.includes('notify')) {
      const put = (channel: TemplateChannel, content: Record<string, string>) =>
        unary(templates, 'upsertTemplate', { category: 'alerts', channel, locale: 'en', content });
      await put(TemplateChannel.INBOX, { title: 'Order {{ data.order }}', body: 'Shipped 📦' });
      await put(TemplateChannel.EMAIL, { subject: 'Order {{ data.order }}', text: 'Shipped 📦' });
      await put(TemplateChannel.SMS, { text: 'Order {{ data.order }}: shipped 📦' });
      await sendAll(
        Array.from({ length: MESSAGES }, (_, i) => i),
        16,
        (i) =>
          unary(users, 'upsertUser', {
            userId: `cap-${i}`,
            emails: [`cap-${i}@example.com`],
            phones: [`+1555${1_000_000 + i}`],
          }),
      );
    }

    const measure = async (
      row: string,
      messages: number,
      send: () => Promise<unknown>,
      finished: () => Promise<boolean>,
    ): Promise<CapacityRow> => {
      // Quiet first: whatever the previous row left (retention, completions) settles.
      await sleep(2000);
      const statements0 = await probe!.statements();
      const wal0 = await probe!.walBytes();
      const cpu = cpuMark(sources);
      const started = performance.now();
      await send();
      await until(`${row} to finish`, finished);
      const seconds = (performance.now() - started) / 1000;
      const spent = cpu.spent();
      const statements = (await probe!.statements()) - statements0;
      const wal = Number((await probe!.walBytes()) - wal0);
      // The idle stretch: as long as the row took (at least 5 s).
      const idleSeconds = Math.max(5, seconds);
      const idleStatements0 = await probe!.statements();
      const idleTimes0 = await probe!.statementTimes();
      const idleCpu = cpuMark(sources);
      let longestRunning: { query: string; ms: number } | undefined;
      const idleEnds = performance.now() + idleSeconds * 1000;
      while (performance.now() < idleEnds) {
        for (const r of await probe!.running()) {
          if (!longestRunning || r.ms > longestRunning.ms)
            longestRunning = { query: shortQuery(r.query), ms: Math.round(r.ms) };
        }
        await sleep(Math.min(250, Math.max(0, idleEnds - performance.now())));
      }
      const idleSpent = idleCpu.spent();
      const idleStatements = (await probe!.statements()) - idleStatements0;
      const busiest = [...(await probe!.statementTimes())]
        .map(([query, t]) => {
          const before = idleTimes0.get(query) ?? { calls: 0, ms: 0 };
          return {
            query: shortQuery(query),
            ms: Math.round(t.ms - before.ms),
            calls: t.calls - before.calls,
          };
        })
        .filter((t) => t.calls > 0 || t.ms > 0)
        .sort((a, b) => b.ms - a.ms)
        .slice(0, 3);
      const per = (x: number) => Math.round((x / messages) * 1000) / 1000;
      const perSecond = (x: number) => Math.round((x / idleSeconds) * 100) / 100;
      const result: CapacityRow = {
        row,
        messages,
        seconds: Math.round(seconds * 10) / 10,
        statementsPerMessage: per(statements),
        pgCpuMsPerMessage: per(spent.postgres ?? 0),
        walBytesPerMessage: Math.round(wal / messages),
        serviceCpuMsPerMessage: per(spent.service ?? 0),
        idle: {
          statementsPerSecond: perSecond(idleStatements),
          pgCpuMsPerSecond: perSecond(idleSpent.postgres ?? 0),
          serviceCpuMsPerSecond: perSecond(idleSpent.service ?? 0),
          busiest,
          ...(longestRunning ? { longestRunning } : {}),
        },
      };
      process.stdout.write(`  ${JSON.stringify(result)}\n`);
      return result;
    };

    const ended = ['sent', 'failed', 'delivered', 'undelivered'];
    const results: CapacityRow[] = [];
    let finalSoFar = 0;
    const deliveriesFinal = (expected: number) => async () =>
      (await probe!.countDeliveries(ended)) >= finalSoFar + expected;
    const indexes = (n: number) => Array.from({ length: n }, (_, i) => i);
    let serial = 0;
    const next = () => serial++;

    for (const row of rows) {
      if (row === 'email') {
        results.push(
          await measure(
            'email SendEmail (SMTP)',
            MESSAGES,
            () =>
              sendAll(indexes(MESSAGES), IN_FLIGHT, () =>
                unary(notifications, 'sendEmail', {
                  to: [`user${next()}@example.com`],
                  subject: 'Your code 📦',
                  text: 'Code 123456 — お届け',
                }),
              ),
            deliveriesFinal(MESSAGES),
          ),
        );
        finalSoFar += MESSAGES;
      } else if (row === 'sms') {
        results.push(
          await measure(
            'sms SendSms (Twilio-style HTTP)',
            MESSAGES,
            () =>
              sendAll(indexes(MESSAGES), IN_FLIGHT, () =>
                unary(notifications, 'sendSms', { to: `+1555${2_000_000 + next()}`, body: 'Code 123456 📦' }),
              ),
            deliveriesFinal(MESSAGES),
          ),
        );
        finalSoFar += MESSAGES;
      } else if (row === 'push') {
        results.push(
          await measure(
            'push SendPush (APNs HTTP/2)',
            MESSAGES,
            () =>
              sendAll(indexes(MESSAGES), IN_FLIGHT, () =>
                unary(notifications, 'sendPush', {
                  message: {
                    deviceToken: (next() + 1).toString(16).padStart(64, '0'),
                    title: 'Hi',
                    body: '📦',
                  },
                }),
              ),
            deliveriesFinal(MESSAGES),
          ),
        );
        finalSoFar += MESSAGES;
      } else if (row === 'push-batch') {
        const total = 10 * BATCH;
        results.push(
          await measure(
            `push SendPushBatch of ${BATCH} (APNs HTTP/2)`,
            total,
            () =>
              sendAll(indexes(total / BATCH), 2, () =>
                unary(notifications, 'sendPushBatch', {
                  messages: Array.from({ length: BATCH }, () => ({
                    deviceToken: (1e9 + next()).toString(16).padStart(64, '0'),
                    title: 'Hi',
                    body: '📦',
                  })),
                }),
              ),
            deliveriesFinal(total),
          ),
        );
        finalSoFar += total;
      } else if (row === 'inbox') {
        const before = await probe.countInbox();
        results.push(
          await measure(
            'inbox Send',
            MESSAGES,
            () =>
              sendAll(indexes(MESSAGES), IN_FLIGHT, () =>
                unary(inbox, 'send', { userId: `inbox-${next() % 500}`, title: 'Hi 👋', body: 'مرحبا' }),
              ),
            async () => (await probe!.countInbox()) >= before + MESSAGES,
          ),
        );
      } else if (row === 'notify') {
        // One Notify = an inbox message, an email and an SMS (three deliveries at the peers).
        const inboxBefore = await probe.countInbox();
        results.push(
          await measure(
            'Notify to one user (inbox + email + sms)',
            MESSAGES,
            () =>
              sendAll(indexes(MESSAGES), IN_FLIGHT, (i) =>
                unary(notify, 'notify', {
                  userId: `cap-${i}`,
                  category: 'alerts',
                  data: { order: `A-${i}` },
                }),
              ),
            async () =>
              (await probe!.countDeliveries(ended)) >= finalSoFar + 2 * MESSAGES &&
              (await probe!.countInbox()) >= inboxBefore + MESSAGES,
          ),
        );
        finalSoFar += 2 * MESSAGES;
      }
    }
    return results;
  } finally {
    for (const c of clients) c.close();
    await probe?.close();
    await service?.stop('SIGTERM', 10_000);
    await apns.close();
    await twilio.close();
    await smtp.stop();
    cluster.stop();
    rmSync(cwd, { recursive: true, force: true });
  }
}

if (require.main === module && process.argv[2] === 'partitions') {
  // `npm run capacity -- partitions [rows]`: partitioned tables against unpartitioned (partitions.ts).
  runPartitions(process.argv[3] ? Number(process.argv[3]) : undefined).then(
    printPartitions,
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
} else if (require.main === module && process.argv[2]?.startsWith('replicas')) {
  // N replicas on one PostgreSQL, dueBackends on a large backlog, the event sequencer (replicas.ts).
  runReplicasCommand(process.argv[2]).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
} else if (require.main === module) {
  const wanted = (process.argv[2]?.split(',') ?? ROWS) as RowName[];
  const unknown = wanted.filter((r) => !ROWS.includes(r));
  if (unknown.length > 0) {
    console.error(`capacity: unknown rows ${unknown.join(', ')} (rows: ${ROWS.join(', ')})`);
    process.exit(2);
  }
  runCapacity(wanted).then(
    (rows) => {
      console.table(
        rows.map((r) => ({
          row: r.row,
          messages: r.messages,
          'statements/msg': r.statementsPerMessage,
          'pg CPU-ms/msg': r.pgCpuMsPerMessage,
          'WAL B/msg': r.walBytesPerMessage,
          'service CPU-ms/msg': r.serviceCpuMsPerMessage,
          'idle stmts/s': r.idle?.statementsPerSecond,
          'idle pg CPU-ms/s': r.idle?.pgCpuMsPerSecond,
          'idle svc CPU-ms/s': r.idle?.serviceCpuMsPerSecond,
        })),
      );
      const dir = join(__dirname, '../../../test-artifacts');
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'capacity.json'), `${JSON.stringify(rows, null, 2)}\n`);
    },
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
