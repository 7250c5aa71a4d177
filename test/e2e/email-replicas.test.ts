/**
 * Two replicas (two real notification processes) on one PostgreSQL, 1,000 emails submitted to both
 * over gRPC: both workers claim from the one deliveries table (SELECT ... FOR UPDATE SKIP LOCKED),
 * and every email reaches the SMTP peer exactly once.
 */
import { createTestDatabase } from '../support/database';
import {
  emailServiceEnv,
  notificationClient,
  sendEmails,
  waitForAllSent,
  type SentEmail,
} from '../support/email-service';
import type { GenericClient } from '../support/grpc-clients';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';
import { createSmtpPeer, type SmtpPeer } from '../support/smtp-peer';

const EMAILS = 1000;
const SETTLE_TIMEOUT_MS = 90_000;

let db: { url: string; drop(): Promise<void> };
let peer: SmtpPeer;
let replicas: ServiceProcess[] = [];
let clients: GenericClient[] = [];

beforeAll(async () => {
  db = await createTestDatabase('email_replicas');
  peer = createSmtpPeer({ parse: false });
  await peer.start();
  const env = emailServiceEnv(
    peer.port,
    { url: db.url },
    {
      delivery: { concurrency: 8, poll_interval_ms: 200 },
    },
  );
  replicas = await Promise.all([
    startServiceProcess('notification', env),
    startServiceProcess('notification', env),
  ]);
  clients = replicas.map((r) => notificationClient(r.grpcPort));
}, 120_000);

afterAll(async () => {
  for (const c of clients) c.close();
  await Promise.all(replicas.map((r) => r.stop()));
  await peer?.stop();
  await db?.drop();
});

/** The `notification_deliveries_total{outcome="sent"}` counter of one replica. */
async function sentBy(replica: ServiceProcess): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${replica.httpPort}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(/^notification_deliveries_total\{[^}]*outcome="sent"[^}]*\} (\d+)/gm)) {
    sum += Number(m[1]);
  }
  return sum;
}

test('1,000 emails submitted to two replicas on one PostgreSQL each arrive exactly once', async () => {
  const subjects = Array.from({ length: EMAILS }, (_, i) => `replica-${i}`);
  const { acked } = await sendEmails(clients, subjects, 32);
  expect(acked).toHaveLength(EMAILS);

  await waitForAllSent(clients[0]!, EMAILS, SETTLE_TIMEOUT_MS);

  const counts = [...peer.messageIds.values()];
  expect(counts.filter((n) => n !== 1)).toEqual([]);
  expect([...peer.messageIds.keys()].sort()).toEqual(acked.map((a: SentEmail) => a.messageId).sort());
  expect(peer.acceptedCount).toBe(EMAILS);

  // Each replica counts what it sent: together exactly the 1,000, however they split the work.
  const split = await Promise.all(replicas.map(sentBy));
  process.stdout.write(`email replicas: sent by replica A ${split[0]}, by replica B ${split[1]}\n`);
  expect(split[0]! + split[1]!).toBe(EMAILS);
}, 180_000);
