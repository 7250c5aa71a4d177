/**
 * Crashes (issue 10, "Tests"): the real notification process killed with SIGKILL while it owns
 * email deliveries, then restarted on the same database, against a real SMTP peer that counts what
 * arrives by Message-ID.
 *
 * 1. On PostgreSQL and on PGlite: 200 emails acknowledged while the relay is down (connection
 *    refused: retryable), SIGKILL, relay up, restart: every one arrives exactly once.
 * 2. On PostgreSQL, under load with the relay up: SIGKILL mid-stream, restart: nothing acknowledged
 *    is lost, and the only resends are sends in flight at the kill, with the Message-ID of the first.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { createTestDatabase } from '../support/database';
import { duplicatedKeys, leasedMessageIds } from '../support/delivery-records';
import {
  countDeliveries,
  emailServiceEnv,
  notificationClient,
  sendEmails,
  STATUS,
  waitForAllSent,
  type EmailStore,
  type SentEmail,
  until,
} from '../support/email-service';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';
import { createSmtpPeer, reservePort, type SmtpPeer } from '../support/smtp-peer';
import { waitFor } from '../support/wait';

// A first PGlite start runs initdb in WASM: seconds alone, far more on a loaded machine. A bound
// against hangs, not a speed check.
const START_TIMEOUT_MS = 120_000;
const SETTLE_TIMEOUT_MS = 60_000;

// Short backoff so the relay coming back is noticed quickly; attempts enough that none exhausts
// while the relay is down (a retry every ~0.5 s on average for 100 attempts). The lease is short so
// the claims of the killed process are taken again soon after the restart, yet well above the attempt
// timeout: on a loaded machine an attempt that times out after the relay took the message, or a lease
// that runs out before an outcome is recorded, would resend what the test says arrives once.
const DELIVERY = {
  base_delay_ms: 100,
  max_delay_ms: 1000,
  max_attempts: 100,
  lease_seconds: 12,
  attempt_timeout_ms: 8000,
  poll_interval_ms: 200,
  concurrency: 8,
};

/** Runs `body` with a fresh store of the kind named, removed afterwards. */
async function withStore(kind: 'PostgreSQL' | 'PGlite', body: (store: EmailStore) => Promise<void>) {
  if (kind === 'PostgreSQL') {
    const db = await createTestDatabase('email_crash');
    try {
      await body({ url: db.url });
    } finally {
      await db.drop();
    }
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'email-crash-pglite-'));
  try {
    await body({ dataDir: join(dir, 'data') });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Starts the service, runs `body` with a client, and always ends the process. */
async function withService<T>(
  env: Record<string, string>,
  body: (proc: ServiceProcess, client: ReturnType<typeof notificationClient>) => Promise<T>,
): Promise<T> {
  const proc = await startServiceProcess('notification', env, { startTimeoutMs: START_TIMEOUT_MS });
  const client = notificationClient(proc.grpcPort);
  try {
    return await body(proc, client);
  } finally {
    client.close();
    await proc.stop('SIGKILL', 1000);
  }
}

let peer: SmtpPeer | undefined;
afterEach(async () => {
  await peer?.stop();
  peer = undefined;
});

describe.each(['PostgreSQL', 'PGlite'] as const)('on %s', (kind) => {
  test(
    '200 emails acknowledged while the relay is down arrive exactly once after a SIGKILL and a restart',
    async () => {
      const port = await reservePort();
      peer = createSmtpPeer({ port, parse: false });
      await withStore(kind, async (store) => {
        const env = emailServiceEnv(port, store, { delivery: DELIVERY });
        const subjects = Array.from({ length: 200 }, (_, i) => `crash-${i}`);

        let acked: SentEmail[] = [];
        await withService(env, async (proc, client) => {
          acked = (await sendEmails([client], subjects, 16)).acked;
          // The relay refusing connections makes attempts retryable, never failed: wait until the
          // service has met it, so the kill interrupts a service that is retrying.
          await until(
            async () => (await countDeliveries(client, STATUS.RETRYING)) > 0,
            'an attempt to meet the refused connection',
            SETTLE_TIMEOUT_MS,
          );
          expect(await countDeliveries(client, STATUS.FAILED)).toBe(0);
          await proc.stop('SIGKILL', 1000);
        });
        expect(acked).toHaveLength(200);
        expect(new Set(acked.map((a) => a.messageId)).size).toBe(200);
        expect(peer!.acceptedCount).toBe(0);

        await peer!.start();
        await withService(env, async (_proc, client) => {
          await waitForAllSent(client, 200, SETTLE_TIMEOUT_MS);
        });

        expect(duplicatedKeys(peer!.messageIds)).toEqual([]);
        expect([...peer!.messageIds.keys()].sort()).toEqual(acked.map((a) => a.messageId).sort());
      });
    },
    4 * START_TIMEOUT_MS,
  );
});

test(
  'on PostgreSQL, a SIGKILL under load loses no acknowledged email and resends only what was in flight, with its Message-ID',
  async () => {
    peer = createSmtpPeer();
    await peer.start();
    const KILL_AFTER = 300;
    await withStore('PostgreSQL', async (store) => {
      const env = emailServiceEnv(peer!.port, store, { delivery: DELIVERY });
      const subjects = Array.from({ length: 5000 }, (_, i) => `load-${i}`);
      let killed = false;
      let inFlightAtKill = new Set<string>();
      let acked: SentEmail[] = [];

      await withService(env, async (proc) => {
        const client = notificationClient(proc.grpcPort);
        try {
          // Keep submitting; once KILL_AFTER sends are acknowledged and the relay is receiving, kill
          // the process without warning. Calls in flight then fail: they were never acknowledged.
          let ackedSoFar = 0;
          const submitting = sendEmails([client], subjects, 16, {
            tolerateFailures: true,
            stop: () => killed,
            onAck: () => ackedSoFar++,
          });
          await waitFor(
            () => ackedSoFar >= KILL_AFTER && peer!.acceptedCount >= 50,
            'acknowledged sends and the relay receiving',
            SETTLE_TIMEOUT_MS,
          );
          proc.child.kill('SIGKILL');
          killed = true;
          acked = (await submitting).acked;
          await proc.stop('SIGKILL', 1000);
          // The sends in flight at the kill: queued records the dead process still holds a lease on
          // (it clears the lease when it records an outcome). Only these may be sent again.
          inFlightAtKill = await leasedMessageIds((store as { url: string }).url);
        } finally {
          client.close();
        }
      });

      await withService(env, async (_proc, client) => {
        await waitForAllSent(client, acked.length, SETTLE_TIMEOUT_MS);
      });

      const received = peer!.messageIds;
      const lost = acked.filter((a) => !received.has(a.messageId));
      const duplicated = duplicatedKeys(peer!.messageIds);
      process.stdout.write(
        `email crash under load: acknowledged ${acked.length}, received ${received.size} distinct ` +
          `(${peer!.acceptedCount} in all), lost ${lost.length}, duplicated ${duplicated.length}, ` +
          `in flight at the kill ${inFlightAtKill.size} (concurrency ${DELIVERY.concurrency})\n`,
      );
      expect(acked.length).toBeGreaterThan(0);
      expect(lost).toEqual([]);
      // A resend can only be of a send the relay accepted before the kill whose SENT was not
      // committed: one of the attempts in flight in the killed process (at most its concurrency of
      // calls plus as many accepted sends whose outcome was being written: README "Leases and crashes").
      expect(inFlightAtKill.size).toBeLessThanOrEqual(2 * DELIVERY.concurrency);
      expect(duplicated.filter((id) => !inFlightAtKill.has(id))).toEqual([]);
      // Each email kept one Message-ID: every subject arrived under exactly one id, the acknowledged
      // one for the acknowledged sends.
      const idsBySubject = new Map<string, Set<string>>();
      for (const mail of peer!.received) {
        const subject = mail.parsed.subject ?? '';
        const ids = idsBySubject.get(subject) ?? new Set<string>();
        ids.add(mail.parsed.messageId ?? '');
        idsBySubject.set(subject, ids);
      }
      for (const [, ids] of idsBySubject) expect(ids.size).toBe(1);
      for (const a of acked) expect([...idsBySubject.get(a.subject)!]).toEqual([a.messageId]);
    });
  },
  4 * START_TIMEOUT_MS,
);
