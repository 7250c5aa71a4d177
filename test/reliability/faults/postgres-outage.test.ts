/**
 * Faults (issue 16): PostgreSQL stopped and restarted under load. A real notification process keeps
 * its inbox and its delivery records in a cluster of this test's own (never the shared one), and
 * sends email to a real SMTP peer. Inbox Send and SendEmail run continuously while the server is
 * halted (fast shutdown: sessions cut) and started again on the same port.
 *
 * Expected: while it is down, grpc.health.v1 answers NOT_SERVING and /health 503, and every call
 * fails fast with UNAVAILABLE within its deadline (never DEADLINE_EXCEEDED, never INTERNAL); after
 * the restart, health is SERVING again by itself; every inbox write acknowledged before or after the
 * outage is stored, and every acknowledged email arrives at the peer exactly once (by Message-ID).
 */
import * as grpc from '@grpc/grpc-js';
import { Client } from 'pg';

import { InboxService } from '../../../shared/gen/svc/notification/v1/inbox_pb';
import {
  emailServiceEnv,
  emailRequest,
  notificationClient,
  waitForAllSent,
} from '../../support/email-service';
import { grpcClient, healthCheck, healthClient, unary, type GenericClient } from '../../support/grpc-clients';
import { startCluster, type RunningCluster } from '../../support/postgres-cluster';
import { startServiceProcess, type ServiceProcess } from '../../support/service-process';
import { createSmtpPeer, type SmtpPeer } from '../../support/smtp-peer';
import { waitFor } from '../../support/wait';
import { atLeast, exactly, recordFigures, reported, SOAK } from '../results';

const CONCURRENCY = 8;
/** Sends acknowledged before the outage, and again after it. */
const ACKED_PER_PHASE = SOAK ? 2000 : 150;
/** Each call's deadline: a call that fails must fail well before it. */
const CALL_DEADLINE_MS = 5000;
/** How long the database stays down once the service has noticed (the readiness poll is 5 s). */
const OUTAGE_MS = SOAK ? 30_000 : 3000;
const SETTLE_TIMEOUT_MS = 90_000;

// Short backoff so the restarted database is used soon; attempts enough to outlast the outage; a
// lease well above the attempt timeout so nothing in flight is taken twice.
const DELIVERY = {
  base_delay_ms: 100,
  max_delay_ms: 1000,
  max_attempts: 100,
  lease_seconds: 12,
  attempt_timeout_ms: 8000,
  poll_interval_ms: 200,
  concurrency: 8,
};

/** One failed call as the load saw it. */
interface Failure {
  code: number;
  ms: number;
}

/** Inbox Send and SendEmail in turn from `CONCURRENCY` loops until `stop()`. */
class Load {
  readonly inboxIds: string[] = [];
  readonly emails: { deliveryId: string; messageId: string }[] = [];
  readonly failures: Failure[] = [];
  private stopped = false;
  private loops: Promise<void>[] = [];
  private seq = 0;

  constructor(
    private readonly inbox: GenericClient,
    private readonly notification: GenericClient,
  ) {}

  get acked(): number {
    return this.inboxIds.length + this.emails.length;
  }

  start(): void {
    this.loops = Array.from({ length: CONCURRENCY }, () => this.loop());
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      const i = this.seq++;
      const started = Date.now();
      try {
        if (i % 2 === 0) {
          const { response } = await unary<{ message: { id: string } }>(
            this.inbox,
            'send',
            { userId: `user-${i % 20}`, title: `outage ${i}`, body: 'hello' },
            { deadlineMs: CALL_DEADLINE_MS },
          );
          this.inboxIds.push(response.message.id);
        } else {
          const { response } = await unary<{ deliveryId: string; messageId: string }>(
            this.notification,
            'sendEmail',
            emailRequest(`outage-${i}`),
            { deadlineMs: CALL_DEADLINE_MS },
          );
          this.emails.push({ deliveryId: response.deliveryId, messageId: response.messageId });
        }
      } catch (err) {
        this.failures.push({ code: (err as grpc.ServiceError).code, ms: Date.now() - started });
        // A refused call comes back at once: do not spin on it.
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  }
}

/** The ids among `ids` that are stored in inbox_messages. */
async function storedInboxIds(url: string, ids: string[]): Promise<Set<string>> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ id: string }>(
      'SELECT id::text AS id FROM inbox_messages WHERE id::text = ANY($1)',
      [ids],
    );
    return new Set(rows.map((r) => r.id));
  } finally {
    await client.end();
  }
}

/** Polls grpc.health.v1 Check every 100 ms until it answers `want` or `timeoutMs` pass; the last answer. */
async function grpcHealthBecomes(client: GenericClient, want: string, timeoutMs: number): Promise<string> {
  let last = '';
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline;) {
    last = await healthCheck(client).catch(() => 'unreachable');
    if (last === want) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return last;
}

/** GET /health: the HTTP status, or 0 when the port does not answer within 10 s. */
async function httpHealth(port: number): Promise<number> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(10_000) });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

let cluster: RunningCluster | undefined;
let peer: SmtpPeer | undefined;
let proc: ServiceProcess | undefined;
afterAll(async () => {
  await proc?.stop('SIGKILL', 1000);
  await peer?.stop();
  cluster?.stop();
});

test('PostgreSQL halted and restarted under load: fail fast with UNAVAILABLE, health follows, nothing acknowledged is lost or sent twice', async () => {
  cluster = await startCluster();
  peer = createSmtpPeer({ parse: false });
  await peer.start();
  proc = await startServiceProcess('notification', {
    ...emailServiceEnv(peer.port, { url: cluster.url }, { delivery: DELIVERY }),
    SVC_NOTIFICATION__INBOX__STORE_BACKEND: 'database',
  });
  const address = `127.0.0.1:${proc.grpcPort}`;
  const inbox = grpcClient(InboxService, address);
  const notification = notificationClient(proc.grpcPort);
  const health = healthClient(address);
  const load = new Load(inbox, notification);
  try {
    // The ports open before the first readiness poll has finished.
    expect(await grpcHealthBecomes(health, 'SERVING', 30_000)).toBe('SERVING');
    load.start();
    await waitFor(
      () => load.acked >= ACKED_PER_PHASE,
      'sends acknowledged before the outage',
      SETTLE_TIMEOUT_MS,
    );

    cluster.halt();
    const down = Date.now();
    const ackedBefore = load.acked;
    const failuresBefore = load.failures.length;
    // The readiness poll notices within its interval; meanwhile calls already fail.
    const grpcDown = await grpcHealthBecomes(health, 'NOT_SERVING', 30_000);
    const httpDown = await httpHealth(proc.httpPort);
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
    const ackedDuringOutage = load.acked - ackedBefore;
    const failedDuringOutage = load.failures.slice(failuresBefore);

    cluster.restart();
    const up = Date.now();
    const grpcUp = await grpcHealthBecomes(health, 'SERVING', 60_000);
    const recoverSeconds = (Date.now() - up) / 1000;
    const httpUp = await httpHealth(proc.httpPort);
    const ackedAtRestart = load.acked;
    await waitFor(
      () => load.acked >= ackedAtRestart + ACKED_PER_PHASE,
      'sends acknowledged after the restart',
      SETTLE_TIMEOUT_MS,
    );
    await load.stop();

    await waitForAllSent(notification, load.emails.length, SETTLE_TIMEOUT_MS);
    const stored = await storedInboxIds(cluster.url, load.inboxIds);
    const lostInbox = load.inboxIds.filter((id) => !stored.has(id));
    const lostEmail = load.emails.filter((e) => !peer!.messageIds.has(e.messageId));
    const duplicated = [...peer!.messageIds.values()].filter((n) => n > 1).length;
    const notUnavailable = load.failures.filter((f) => f.code !== grpc.status.UNAVAILABLE);
    const overDeadline = load.failures.filter((f) => f.ms >= CALL_DEADLINE_MS);
    const codes = [...new Set(load.failures.map((f) => grpc.status[f.code]))].join(', ');

    recordFigures({
      section: 'faults-postgres',
      title: 'Faults: PostgreSQL halted and restarted under load',
      kind: 'faults',
      figures: [
        reported('outage (s)', Math.round((up - down) / 100) / 10),
        atLeast('acknowledged (inbox + email)', load.acked, 2 * ACKED_PER_PHASE),
        reported('acknowledged during the outage', ackedDuringOutage),
        atLeast('failed fast during the outage (UNAVAILABLE)', failedDuringOutage.length, 1),
        exactly('failed with another code than UNAVAILABLE', notUnavailable.length, 0),
        exactly('failed at or past the deadline', overDeadline.length, 0),
        reported('failure codes', codes || 'none'),
        exactly('inbox writes lost', lostInbox.length, 0),
        reported('emails arrived (distinct)', peer!.messageIds.size),
        exactly('emails lost', lostEmail.length, 0),
        exactly('emails duplicated', duplicated, 0),
        reported('seconds to SERVING after the restart', Math.round(recoverSeconds * 10) / 10),
      ],
    });

    expect(grpcDown).toBe('NOT_SERVING');
    expect(httpDown).toBe(503);
    expect(grpcUp).toBe('SERVING');
    expect(httpUp).toBe(200);
    expect(failedDuringOutage.length).toBeGreaterThan(0);
    // The service logs the cause of every INTERNAL: show it with the failure.
    const internalCauses = proc.logs
      .filter((l) => l.includes('unhandled error in RPC handler'))
      .map((l) => (JSON.parse(l) as { err?: { message?: string } }).err?.message);
    expect({ notUnavailable, internalCauses }).toEqual({ notUnavailable: [], internalCauses: [] });
    expect(overDeadline).toEqual([]);
    expect(lostInbox).toEqual([]);
    expect(lostEmail).toEqual([]);
    expect(duplicated).toBe(0);
    expect(proc.child.exitCode).toBeNull();
  } finally {
    await load.stop();
    inbox.close();
    notification.close();
    health.close();
  }
}, 300_000);
