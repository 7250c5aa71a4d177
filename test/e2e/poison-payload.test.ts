/**
 * Poison (issue 23): a payload whose attempt kills the process sending it. The real notification
 * process, its records on real PostgreSQL; the Twilio-style stand-in SIGKILLs the process whenever it
 * receives that one message (as an OOM or a driver bug in the process would end it), and the test
 * restarts the process after each crash, as an orchestrator does. Attempts count when claimed, so
 * after `max_attempts` crashes the next process ends the record FAILED (`worker_died`) instead of
 * sending it again, and every other message was sent exactly once.
 */
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
const POISON = 'poison: this message kills the process that sends it';
// One attempt at a time: when the poison kills the process nothing else is in flight, so a resend
// of another message would be the pipeline's fault, not the crash's.
const DELIVERY = {
  max_attempts: 3,
  base_delay_ms: 100,
  max_delay_ms: 500,
  lease_seconds: 3,
  attempt_timeout_ms: 2000,
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

afterAll(async () => {
  await current?.stop('SIGKILL', 1000);
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

test('when one payload kills its process on every attempt, it ends FAILED (worker died) after max_attempts restarts and every other message is sent once', async () => {
  db = await createTestDatabase('poison');
  smtp = createSmtpPeer();
  await smtp.start();
  sms = await startTwilioPeer();
  const env = {
    ...emailServiceEnv(smtp.port, { url: db.url }, { delivery: DELIVERY }),
    ...smsServiceEnv(sms),
  };
  sms.onMessage = (form) => {
    if (form.Body !== POISON) return undefined;
    current?.child.kill('SIGKILL');
    return { kind: 'hang' };
  };

  const others = new Map<string, string>(); // body -> delivery id
  let poisonId = '';
  let n = 0;
  let crashes = 0;
  let poisonFailed = false;
  // Each round: a process starts, sends a few messages, and (until the record fails) dies on the
  // poison once the dead process's lease on it expires.
  for (let round = 0; round <= DELIVERY.max_attempts && !poisonFailed; round++) {
    current = await startServiceProcess('notification', env, { startTimeoutMs: START_TIMEOUT_MS });
    const client = notificationClient(current.grpcPort);
    try {
      // The first process gets six messages, then the poison; later ones get a few more while the
      // dead process's lease on the poison runs out (the poison may kill it first: an unanswered
      // send was never acknowledged, and is not counted).
      for (let i = 0; i < (round === 0 ? 6 : 2); i++, n++) {
        const body = `message ${n}`;
        const id = await sendSms(client, body, n).catch((err: unknown) => {
          if (round === 0) throw err;
          return undefined;
        });
        if (id === undefined) break;
        others.set(body, id);
      }
      if (round === 0) poisonId = await sendSms(client, POISON, n++);
      await until(
        async () =>
          exited(current!) ||
          (await getDelivery(client, poisonId).then(
            (d) => d.status === FAILED,
            () => false,
          )),
        'the process to die on the poison, or the poison to end FAILED',
        SETTLE_TIMEOUT_MS,
      );
      if (exited(current)) crashes++;
      else poisonFailed = true;
    } finally {
      client.close();
    }
    if (!poisonFailed) await current.stop('SIGKILL', 1000);
  }

  const client = notificationClient(current!.grpcPort);
  try {
    expect(crashes).toBe(DELIVERY.max_attempts);
    expect(poisonFailed).toBe(true);
    expect(await getDelivery(client, poisonId)).toMatchObject({ status: FAILED, failure: WORKER_DIED });
    // Every other message SENT, and received exactly once.
    await until(
      async () => {
        for (const id of others.values()) if ((await getDelivery(client, id)).status !== SENT) return false;
        return true;
      },
      'every other message SENT',
      SETTLE_TIMEOUT_MS,
    );
    const counts = new Map<string, number>();
    for (const r of sms.requests) counts.set(r.form.Body!, (counts.get(r.form.Body!) ?? 0) + 1);
    expect(counts.get(POISON)).toBe(DELIVERY.max_attempts);
    for (const body of others.keys()) expect([body, counts.get(body)]).toEqual([body, 1]);
  } finally {
    client.close();
    await current!.stop('SIGTERM', 10_000);
    current = undefined;
  }
});
