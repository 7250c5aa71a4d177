/**
 * Poison (issue 23): a payload whose attempt kills the process sending it. The real notification
 * process, its records on real PostgreSQL; the Twilio-style stand-in SIGKILLs the process whenever it
 * receives that one message (as an OOM or a driver bug in the process would end it), and the test
 * restarts the process after each crash, as an orchestrator does. Attempts count when claimed, so
 * after `max_attempts` crashes the next process ends the record FAILED (`worker_died`) instead of
 * sending it again, and every other message was sent exactly once.
 */
import type { ChildProcess } from 'node:child_process';
import { createTestDatabase } from '../support/database';
import { emailServiceEnv, notificationClient, until } from '../support/email-service';
import { unary, type GenericClient } from '../support/grpc-clients';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';
import { createSmtpPeer, type SmtpPeer } from '../support/smtp-peer';
import { smsNumber, smsServiceEnv } from '../support/sms-service';
import { startTwilioPeer, type TwilioPeer } from '../notification/channels/sms/twilio-peer';

// Bounds against hangs, never speed checks.
const START_TIMEOUT_MS = 60_000;
const SETTLE_TIMEOUT_MS = 60_000;
const TEST_TIMEOUT_MS = 300_000;
const POISON = 'poison: this message kills the process that sends it';
// One attempt at a time: when the poison kills the process nothing else is in flight, so a resend
// of another message would be the pipeline's fault, not the crash's. The attempt timeout is a bound
// far above how late this (loaded) jest process may read a request: the stand-in must kill the
// sender while its attempt is still running, or the attempt would end as an ordinary timeout
// (recorded, retried) and the kill would land on whatever the process does next. The lease must
// outlast it; each restart waits for the dead process's lease to run out.
const DELIVERY = {
  max_attempts: 3,
  base_delay_ms: 100,
  max_delay_ms: 500,
  lease_seconds: 9,
  attempt_timeout_ms: 8000,
  poll_interval_ms: 200,
  concurrency: 1,
};
const FAILED = 4;
const SENT = 5;
const WORKER_DIED = 12;
let db: { url: string; drop(): Promise<void> } | undefined;
let smtp: SmtpPeer | undefined;
let sms: TwilioPeer | undefined;
let current: ServiceProcess | undefined;
/** The one notification process alive: set when it is spawned, before it listens (its worker may claim and send already). */
let alive: ChildProcess | undefined;

afterAll(async () => {
  await current?.stop('SIGKILL', 1000);
  alive?.kill('SIGKILL');
  await smtp?.stop();
  await sms?.close();
  await db?.drop();
});

async function sendSms(client: GenericClient, body: string, i: number): Promise<string> {
  const { response } = await unary<{ deliveryId: string }>(
    client,
    'sendSms',
    { to: smsNumber(i), body },
    { deadlineMs: 30_000 },
  );
  return response.deliveryId;
}

async function getDelivery(client: GenericClient, id: string): Promise<{ status: number; failure: number }> {
  const { response } = await unary<{ delivery: { status: number; failure: number } }>(
    client,
    'getDelivery',
    { id },
    { deadlineMs: 30_000 },
  );
  return response.delivery;
}

const exited = (p: ServiceProcess) => p.child.exitCode !== null || p.child.signalCode !== null;

test(
  'when one payload kills its process on every attempt, it ends FAILED (worker died) after max_attempts restarts and every other message is sent once',
  async () => {
    db = await createTestDatabase('poison');
    smtp = createSmtpPeer();
    await smtp.start();
    sms = await startTwilioPeer();
    const env = {
      ...emailServiceEnv(smtp.port, { url: db.url }, { delivery: DELIVERY }),
      ...smsServiceEnv(sms),
    };
    // The stand-in kills the process that sent the poison: the one alive (each is spawned only once
    // the previous one has exited), whether or not it listens yet. A process restarted after the dead
    // one's lease ran out claims the poison as its worker starts, before its ports are known.
    const killed = new Set<ChildProcess>();
    sms.onMessage = (form) => {
      if (form.Body !== POISON) return undefined;
      if (alive) {
        killed.add(alive);
        alive.kill('SIGKILL');
      }
      return { kind: 'hang' };
    };

    const acknowledged = new Map<string, string>(); // body -> delivery id
    // Sends the poison killed before they were answered: stored or not, never acknowledged.
    const unacknowledged = new Set<string>();
    let poisonId = '';
    let n = 0;
    let poisonFailed = false;
    // Each round: a process starts, takes a few messages, and (until the record fails) dies on the
    // poison once the dead process's lease on it expires.
    for (let round = 0; round <= DELIVERY.max_attempts && !poisonFailed; round++) {
      let started: ServiceProcess;
      try {
        started = await startServiceProcess('notification', env, {
          startTimeoutMs: START_TIMEOUT_MS,
          onSpawn: (child) => (alive = child),
        });
      } catch (err) {
        // The poison killed it before it listened: a crash like any other (startServiceProcess has
        // waited for its exit). Any other failed start fails the test.
        if (alive && killed.has(alive)) continue;
        throw err;
      }
      current = started;
      const client = notificationClient(started.grpcPort);
      try {
        // The first process gets six messages, then the poison; later ones get a few more while the
        // dead process's lease on the poison runs out (the poison may kill it first).
        for (let i = 0; i < (round === 0 ? 6 : 2); i++) {
          const body = `message ${n}`;
          const id = await sendSms(client, body, n++).catch((err: unknown) => {
            if (round === 0) throw err;
            return undefined;
          });
          if (id === undefined) {
            unacknowledged.add(body);
            break;
          }
          acknowledged.set(body, id);
        }
        if (round === 0) poisonId = await sendSms(client, POISON, n++);
        await until(
          async () =>
            exited(started) ||
            (await getDelivery(client, poisonId).then(
              (d) => d.status === FAILED,
              () => false,
            )),
          'the process to die on the poison, or the poison to end FAILED',
          SETTLE_TIMEOUT_MS,
        );
        if (exited(started) && !killed.has(started.child))
          throw new Error(`the process exited, not killed by the poison:\n${started.logs.join('\n')}`);
        poisonFailed = !exited(started);
      } finally {
        client.close();
      }
      if (!poisonFailed) await started.stop('SIGKILL', 1000);
    }

    const client = notificationClient(current!.grpcPort);
    try {
      // Every process the poison reached died of it: one per started attempt, then it failed.
      expect(killed.size).toBe(DELIVERY.max_attempts);
      expect(poisonFailed).toBe(true);
      expect(await getDelivery(client, poisonId)).toMatchObject({ status: FAILED, failure: WORKER_DIED });
      // Every other message SENT, and received exactly once.
      await until(
        async () => {
          for (const id of acknowledged.values())
            if ((await getDelivery(client, id)).status !== SENT) return false;
          return true;
        },
        'every other message SENT',
        SETTLE_TIMEOUT_MS,
      );
      const counts = new Map<string, number>();
      for (const r of sms.requests) counts.set(r.form.Body!, (counts.get(r.form.Body!) ?? 0) + 1);
      expect(counts.get(POISON)).toBe(DELIVERY.max_attempts);
      for (const body of acknowledged.keys()) expect([body, counts.get(body)]).toEqual([body, 1]);
      // A send cut off by a crash may have been stored (then it is sent, once) or not.
      for (const body of unacknowledged) expect([body, (counts.get(body) ?? 0) <= 1]).toEqual([body, true]);
    } finally {
      client.close();
      await current!.stop('SIGTERM', 10_000);
      current = undefined;
    }
  },
  TEST_TIMEOUT_MS,
);
