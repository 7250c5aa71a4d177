/**
 * Load (issue 16): sustained mixed traffic on loopback against one real notification process whose
 * inbox and delivery records live on real PostgreSQL (the run's shared cluster, a database of its
 * own): inbox Send, GetInbox, WatchInbox streams opened and closed all along (one per watched user),
 * SendEmail to a local smtp-server and SendSms to the Twilio-style stand-in, closed-loop (each
 * client sends its next call when the last one answered).
 *
 * Figures: calls and errors, p50/p99 per call kind (reported only: speed is the benchmarks' job),
 * resident memory at the start of the run (after warm-up) and at its end (growth <= 10%), and, once
 * the clients have left,
 * client connections and open WatchInbox streams back to 0, other descriptors back to their level
 * after warm-up, and the connections to each peer within their configured pool. Every acknowledged
 * email and SMS reaches its peer.
 *
 * Short run in `npm test`: 30 s of load after 10 s of warm-up. `npm run soak`: 10 minutes, or
 * RELIABILITY_SOAK_SECONDS.
 */
import type * as grpc from '@grpc/grpc-js';

import { InboxService } from '../../../shared/gen/svc/notification/v1/inbox_pb';
import { startTwilioPeer, type TwilioPeer } from '../../notification/channels/sms/twilio-peer';
import { createTestDatabase, serverUrl } from '../../support/database';
import { emailRequest, emailServiceEnv, notificationClient, until } from '../../support/email-service';
import { grpcClient, unary, type GenericClient } from '../../support/grpc-clients';
import {
  descriptorCounts,
  inspectorUrl,
  memoryAfterGc,
  metricSum,
  rssBytes,
  type DescriptorCounts,
  type MemoryReading,
} from '../../support/process-probe';
import { startServiceProcess, type ServiceProcess } from '../../support/service-process';
import { createSmtpPeer, type SmtpPeer } from '../../support/smtp-peer';
import { smsNumber, smsServiceEnv } from '../../support/sms-service';
import { waitFor } from '../../support/wait';
import { atLeast, atMost, exactly, recordFigures, reported, SOAK } from '../results';
import { CallStats, loop } from './call-stats';

const LOAD_SECONDS = SOAK ? Number(process.env.RELIABILITY_SOAK_SECONDS ?? 600) : 30;
const WARMUP_SECONDS = SOAK ? 30 : 10;
// Bounds against hangs, never speed checks: one call, a stream's first frame, the peers catching
// up and the descriptors settling after the clients left.
const CALL_DEADLINE_MS = 30_000;
const SETTLE_TIMEOUT_MS = 60_000;

// Closed-loop clients per call kind, and the watched users (one WatchInbox loop each).
const INBOX_SENDERS = 4;
const INBOX_READERS = 2;
const EMAIL_SENDERS = 2;
const SMS_SENDERS = 2;
const WATCHED_USERS = 16;
// Inbox sends go to these users, the watched ones among them.
const USERS = 24;
// How long a watch stays open before its client closes it and opens the next one.
const WATCH_HOLD_MS = 2000;

// The pools the process may keep open to its peers once the clients left (their config defaults):
// smtp max_connections, sms_gateway max_connections, database pool_max plus the inbox's LISTEN
// connection and one spare for a connection being replaced.
const PEER_POOL_BOUNDS = { smtp: 5, sms: 10, postgresql: 10 + 2 };

/**
 * Growth of resident memory allowed from after warm-up to the end of the run, both read right after
 * a full garbage collection of the service (through its inspector: it runs with
 * `--inspect=127.0.0.1:0`). Decision: without that, one reading swings with the collector's cycle by
 * more than the target (measured here: heap in use 47-92 MiB within one 150 s run with no trend, and
 * in a 30 s run after a 10 s warm-up no full collection at all while the heap grew 64 -> 81 MiB of
 * garbage); after a full collection what is left is what the process keeps, so a leak shows.
 */
const RSS_GROWTH_LIMIT = 0.1;
// Memory is also sampled up to this many times over the run, reported to show its course.
const MEMORY_SAMPLES = 10;

let db: { url: string; drop(): Promise<void> } | undefined;
let smtp: SmtpPeer | undefined;
let sms: TwilioPeer | undefined;
let service: ServiceProcess | undefined;

afterAll(async () => {
  await service?.stop('SIGTERM', 10_000);
  await smtp?.stop();
  await sms?.close();
  await db?.drop();
});

/** What one phase of traffic acknowledged. */
interface Acked {
  emails: string[];
  sms: number;
  frames: number;
}

/** The call kind of a WatchInbox stream, timed from the call to its first frame. */
const WATCH_KIND = 'WatchInbox (to first frame)';

/**
 * Opens WatchInbox for `userId`; on its first frame calls `on.live`, then holds it `holdMs` calling
 * `on.frame` for every further frame, and cancels it. Rejects when it ends otherwise.
 */
async function watchOnce(
  client: GenericClient,
  userId: string,
  holdMs: number,
  on: { live: () => void; frame: () => void },
): Promise<void> {
  const call = (client.watchInbox as (r: unknown) => grpc.ClientReadableStream<unknown>).call(client, {
    userId,
  });
  let live = false;
  let cancelled = false;
  await new Promise<void>((resolve, reject) => {
    const noFrame = setTimeout(() => {
      cancelled = true;
      call.cancel();
    }, CALL_DEADLINE_MS);
    call.on('data', () => {
      if (!live) {
        live = true;
        on.live();
        clearTimeout(noFrame);
        setTimeout(() => {
          cancelled = true;
          call.cancel();
        }, holdMs);
      } else on.frame();
    });
    call.on('error', () => undefined); // the status below says what happened
    call.on('status', (status: grpc.StatusObject) => {
      clearTimeout(noFrame);
      // CANCELLED is ours (the hold ended); anything else, or no first frame, is a failed watch.
      if (live && (status.code === 0 || (status.code === 1 && cancelled))) resolve();
      else
        reject(
          new Error(
            `WatchInbox ended with ${status.code} ${status.details}${live ? '' : ' before its first frame'}`,
          ),
        );
    });
  });
}

/** Runs the mix over fresh clients until `stop()` says so (at the latest `endAt`), then closes the clients. */
async function traffic(port: number, endAt: number, stats: CallStats, stop = () => false): Promise<Acked> {
  const inbox = grpcClient(InboxService, `127.0.0.1:${port}`);
  const notification = notificationClient(port);
  const acked: Acked = { emails: [], sms: 0, frames: 0 };
  const done = () => stop() || Date.now() >= endAt;
  const user = (i: number) => `load-user-${i % USERS}`;
  const opts = { deadlineMs: CALL_DEADLINE_MS };
  try {
    await Promise.all([
      ...Array.from({ length: INBOX_SENDERS }, (_, s) =>
        loop(stats, 'Send', done, (i) =>
          unary(
            inbox,
            'send',
            { userId: user(i * INBOX_SENDERS + s), title: `load ${s}-${i}`, body: 'b' },
            opts,
          ),
        ),
      ),
      ...Array.from({ length: INBOX_READERS }, (_, s) =>
        loop(stats, 'GetInbox', done, (i) =>
          unary(inbox, 'getInbox', { userId: user(i * INBOX_READERS + s), pageSize: 20 }, opts),
        ),
      ),
      ...Array.from({ length: EMAIL_SENDERS }, (_, s) =>
        loop(stats, 'SendEmail', done, async (i) => {
          const { response } = await unary<{ messageId: string }>(
            notification,
            'sendEmail',
            emailRequest(`load-${s}-${i}`),
            opts,
          );
          acked.emails.push(response.messageId);
        }),
      ),
      ...Array.from({ length: SMS_SENDERS }, (_, s) =>
        loop(stats, 'SendSms', done, async (i) => {
          await unary(
            notification,
            'sendSms',
            { to: smsNumber(i * SMS_SENDERS + s), body: `load ${s}-${i}` },
            opts,
          );
          acked.sms++;
        }),
      ),
      ...Array.from({ length: WATCHED_USERS }, async (_, u) => {
        // Timed to the first frame (the stream is live), not over the hold.
        while (!done()) {
          const started = performance.now();
          const hold = Math.max(0, Math.min(WATCH_HOLD_MS, endAt - Date.now()));
          try {
            await watchOnce(inbox, user(u), hold, {
              live: () => stats.ok(WATCH_KIND, performance.now() - started),
              frame: () => acked.frames++,
            });
          } catch (err) {
            stats.error(WATCH_KIND, err);
          }
        }
      }),
    ]);
  } finally {
    inbox.close();
    notification.close();
  }
  return acked;
}

/**
 * Samples the service's RSS and V8 heap in use (its /metrics) MEMORY_SAMPLES times over `seconds`,
 * the first at once; `stop` ends it and resolves with the samples.
 */
function sampleMemory(proc: ServiceProcess, seconds: number): { stop(): Promise<MemoryReading[]> } {
  const taken: MemoryReading[] = [];
  let pending = Promise.resolve();
  const sample = () => {
    // RSS at once; the heap from /metrics may answer late on a loaded machine.
    const rss = rssBytes(proc.child.pid!);
    const heap = metricSum(`http://127.0.0.1:${proc.httpPort}/metrics`, 'nodejs_heap_size_used_bytes').catch(
      () => NaN,
    );
    pending = pending.then(async () => {
      const heapUsed = await heap;
      if (taken.length < MEMORY_SAMPLES) taken.push({ rss, heapUsed });
    });
  };
  sample();
  const timer = setInterval(sample, (seconds * 1000) / MEMORY_SAMPLES);
  return {
    async stop() {
      clearInterval(timer);
      await pending;
      return taken;
    },
  };
}

/** Open WatchInbox streams, by the RPC layer's in-flight gauge. */
function openStreams(proc: ServiceProcess): Promise<number> {
  return metricSum(
    `http://127.0.0.1:${proc.httpPort}/metrics`,
    'rpc_server_in_flight',
    'rpc_method="WatchInbox"',
  );
}

test(
  `${LOAD_SECONDS} s of mixed inbox, email and SMS traffic: no errors, bounded memory, descriptors and streams back to baseline`,
  async () => {
    db = await createTestDatabase('load_mixed');
    smtp = createSmtpPeer({ parse: false });
    await smtp.start();
    sms = await startTwilioPeer({ record: false });
    service = await startServiceProcess('notification', {
      ...emailServiceEnv(smtp.port, { url: db.url }, { delivery: { poll_interval_ms: 200 } }),
      ...smsServiceEnv(sms),
      SVC_NOTIFICATION__INBOX__STORE_BACKEND: 'database',
      // Loopback only, for the full garbage collections before reading memory.
      NODE_OPTIONS: '--inspect=127.0.0.1:0',
    });
    const pid = service.child.pid!;
    const metricsUrl = `http://127.0.0.1:${service.httpPort}/metrics`;
    const peers = {
      smtp: smtp.port,
      sms: Number(new URL(sms.baseUrl).port),
      postgresql: Number(new URL(serverUrl()).port),
    };
    const descriptors = (): DescriptorCounts =>
      descriptorCounts(pid, [service!.grpcPort, service!.httpPort], peers);
    const inspector = inspectorUrl(service.logs);
    const settledMemory = () => memoryAfterGc(pid, inspector, metricsUrl);
    const clientsGone = async (): Promise<boolean> =>
      descriptors().inbound === 0 && (await openStreams(service!)) === 0;

    // Warm-up: the same mix, so pools, caches and the JIT reach their working size; then its clients
    // leave, and the descriptors left open are the baseline.
    const warmup = new CallStats();
    const warmAcked = await traffic(service.grpcPort, Date.now() + WARMUP_SECONDS * 1000, warmup);
    const rssAfterWarmup = rssBytes(pid);
    const settledStart = await settledMemory();
    await until(clientsGone, 'the warm-up clients to leave', SETTLE_TIMEOUT_MS);
    const baseline = descriptors();

    // The measured run.
    const stats = new CallStats();
    const samples = sampleMemory(service, LOAD_SECONDS);
    const acked = await traffic(service.grpcPort, Date.now() + LOAD_SECONDS * 1000, stats);
    const memory = await samples.stop();
    const rssAtEnd = rssBytes(pid);
    const settledEnd = await settledMemory();
    const streamsAtEnd = await openStreams(service);

    // The clients have left: client connections and streams go back to 0, other descriptors to their
    // baseline, and what stays open to the peers is within the pools.
    let settled = true;
    try {
      await until(
        async () => (await clientsGone()) && descriptors().other <= baseline.other,
        'client connections, streams and descriptors back to baseline',
        SETTLE_TIMEOUT_MS,
      );
    } catch {
      settled = false;
    }
    const end = descriptors();
    const streamsAfter = await openStreams(service);

    // Every acknowledged send reaches its peer (the warm-up's too).
    const emailsAcked = [...warmAcked.emails, ...acked.emails];
    const smsAcked = warmAcked.sms + acked.sms;
    let delivered = true;
    try {
      await waitFor(
        () => emailsAcked.every((id) => smtp!.messageIds.has(id)) && sms!.accepted >= smsAcked,
        'every acknowledged email and SMS at its peer',
        SETTLE_TIMEOUT_MS,
      );
    } catch {
      delivered = false;
    }
    const emailsMissing = emailsAcked.filter((id) => !smtp!.messageIds.has(id)).length;

    const growth = (settledEnd.rss - settledStart.rss) / settledStart.rss;
    const mib = (b: number) => Math.round((b / 1024 / 1024) * 10) / 10;
    const kinds = [...stats.kinds.keys()];
    recordFigures({
      section: 'load-mixed',
      title: `Load: mixed inbox, email and SMS traffic, ${LOAD_SECONDS} s on one notification process (PostgreSQL)`,
      kind: 'load',
      figures: [
        reported('duration of load (s)', LOAD_SECONDS),
        reported('warm-up before it (s)', WARMUP_SECONDS),
        reported(
          'clients',
          `${INBOX_SENDERS} Send, ${INBOX_READERS} GetInbox, ${EMAIL_SENDERS} SendEmail, ${SMS_SENDERS} SendSms, ${WATCHED_USERS} WatchInbox`,
        ),
        atLeast('calls', stats.totalCalls, 1),
        exactly('errors', stats.totalErrors, 0),
        reported(
          'error rate',
          stats.totalCalls === 0 ? 'n/a' : `${((stats.totalErrors / stats.totalCalls) * 100).toFixed(3)}%`,
        ),
        ...kinds.flatMap((k) => [
          reported(`${k}: calls`, stats.kinds.get(k)!.calls),
          reported(`${k}: p50 / p99 (ms)`, `${stats.quantile(k, 0.5)} / ${stats.quantile(k, 0.99)}`),
        ]),
        atLeast('WatchInbox frames received after the first', acked.frames, 1),
        reported(
          'RSS right after warm-up / at the end of the load, as read (MiB)',
          `${mib(rssAfterWarmup)} / ${mib(rssAtEnd)}`,
        ),
        reported(
          `RSS over the load, ${memory.length} samples (MiB)`,
          memory.map((m) => mib(m.rss)).join(' '),
        ),
        reported(
          'RSS after a full GC, after warm-up / at the end (MiB)',
          `${mib(settledStart.rss)} / ${mib(settledEnd.rss)}`,
        ),
        reported(
          'V8 heap in use after a full GC, after warm-up / at the end (MiB)',
          `${mib(settledStart.heapUsed)} / ${mib(settledEnd.heapUsed)}`,
        ),
        atMost('RSS growth (%)', Math.round(growth * 1000) / 10, RSS_GROWTH_LIMIT * 100),
        reported('open WatchInbox streams at the end of the load', streamsAtEnd),
        exactly('open WatchInbox streams after the clients left', streamsAfter, 0),
        exactly('client connections after the clients left', end.inbound, 0),
        reported('descriptors after warm-up / after the clients left', `${baseline.total} / ${end.total}`),
        atMost(
          'other descriptors after the clients left (files, pipes, listeners)',
          end.other,
          baseline.other,
        ),
        atMost('connections to the SMTP peer', end.outbound.smtp!, PEER_POOL_BOUNDS.smtp),
        atMost('connections to the SMS stand-in', end.outbound.sms!, PEER_POOL_BOUNDS.sms),
        atMost('connections to PostgreSQL', end.outbound.postgresql!, PEER_POOL_BOUNDS.postgresql),
        exactly('acknowledged emails not received', emailsMissing, 0),
        exactly('acknowledged SMS not received', Math.max(0, smsAcked - sms.accepted), 0),
      ],
    });

    for (const [kind, k] of stats.kinds)
      expect({ kind, errors: k.errors, samples: k.errorSamples }).toEqual({ kind, errors: 0, samples: [] });
    expect(stats.kinds.size).toBe(5);
    expect(acked.frames).toBeGreaterThan(0);
    expect(growth).toBeLessThanOrEqual(RSS_GROWTH_LIMIT);
    expect(settled).toBe(true);
    expect(streamsAfter).toBe(0);
    expect(end.inbound).toBe(0);
    expect(end.other).toBeLessThanOrEqual(baseline.other);
    expect(end.outbound.smtp).toBeLessThanOrEqual(PEER_POOL_BOUNDS.smtp);
    expect(end.outbound.sms).toBeLessThanOrEqual(PEER_POOL_BOUNDS.sms);
    expect(end.outbound.postgresql).toBeLessThanOrEqual(PEER_POOL_BOUNDS.postgresql);
    expect(delivered).toBe(true);
    expect(emailsMissing).toBe(0);
  },
  (WARMUP_SECONDS + LOAD_SECONDS) * 1000 + 4 * SETTLE_TIMEOUT_MS,
);
