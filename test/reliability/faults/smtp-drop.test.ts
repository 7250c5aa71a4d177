/**
 * Faults (issue 16): an SMTP relay that drops the connection in the middle of DATA. A real
 * notification process sends through a real smtp-server peer whose first answers to DATA cut every
 * connection once the message starts to arrive. Expected: the process stays up, the attempts are
 * retried, and every acknowledged email arrives exactly once, under the Message-ID SendEmail answered.
 */
import {
  emailServiceEnv,
  notificationClient,
  sendEmails,
  STATUS,
  countDeliveries,
  waitForAllSent,
} from '../../support/email-service';
import { startServiceProcess, type ServiceProcess } from '../../support/service-process';
import { createSmtpPeer, type SmtpPeer } from '../../support/smtp-peer';
import { atLeast, exactly, recordFigures, reported, SOAK } from '../results';

const EMAILS = SOAK ? 500 : 40;
/** DATA commands answered by a dropped connection before the relay behaves. */
const DROPS = SOAK ? 100 : 10;
/**
 * Consecutive drops keep the circuit open: each half-open trial after the 1 s cooldown meets the next
 * drop, so the soak's 100 drops alone take 100 s or more before anything is sent.
 */
const SETTLE_TIMEOUT_MS = SOAK ? 600_000 : 60_000;

let peer: SmtpPeer | undefined;
let proc: ServiceProcess | undefined;
afterAll(async () => {
  await proc?.stop('SIGKILL', 1000);
  await peer?.stop();
});

test(
  'a relay that drops the connection mid-DATA: retried, every acknowledged email arrives once by Message-ID',
  async () => {
    peer = createSmtpPeer();
    peer.script = Array.from({ length: DROPS }, () => ({ kind: 'drop' as const }));
    await peer.start();
    proc = await startServiceProcess('notification', {
      ...emailServiceEnv(peer.port, 'memory', {
        delivery: { base_delay_ms: 50, max_delay_ms: 500, max_attempts: 50, poll_interval_ms: 100 },
      }),
      // The drops open the backend's circuit breaker; a short cooldown lets the relay be tried again soon.
      SVC_NOTIFICATION__DELIVERY__CIRCUIT_BREAKER__COOLDOWN_SECONDS: '1',
    });
    const client = notificationClient(proc.grpcPort);
    try {
      const subjects = Array.from({ length: EMAILS }, (_, i) => `drop-${i}`);
      const { acked } = await sendEmails([client], subjects, 8);
      await waitForAllSent(client, acked.length, SETTLE_TIMEOUT_MS);
      const failed = await countDeliveries(client, STATUS.FAILED);
      const lost = acked.filter((a) => !peer!.messageIds.has(a.messageId));
      const duplicated = [...peer!.messageIds.values()].filter((n) => n > 1).length;
      // Each email kept one Message-ID: its subject arrived under the acknowledged one only.
      const wrongId = peer!.received.filter(
        (m) => acked.find((a) => a.subject === m.parsed.subject)?.messageId !== m.parsed.messageId,
      );
      const dropped = peer!.dataCount - peer!.acceptedCount;

      recordFigures({
        section: 'faults-smtp',
        title: 'Faults: SMTP relay dropping the connection mid-DATA',
        kind: 'faults',
        figures: [
          exactly('acknowledged', acked.length, EMAILS),
          atLeast('DATA dropped mid-message', dropped, DROPS),
          exactly('arrived (distinct Message-IDs)', peer!.messageIds.size, acked.length),
          exactly('lost', lost.length, 0),
          exactly('duplicated', duplicated, 0),
          exactly('arrived under another Message-ID', wrongId.length, 0),
          exactly('FAILED', failed, 0),
          reported('DATA commands in all', peer!.dataCount),
        ],
      });

      expect(acked).toHaveLength(EMAILS);
      expect(dropped).toBeGreaterThanOrEqual(DROPS);
      expect(lost).toEqual([]);
      expect(duplicated).toBe(0);
      expect(wrongId).toEqual([]);
      expect(failed).toBe(0);
      expect(proc.child.exitCode).toBeNull();
    } finally {
      client.close();
    }
  },
  SETTLE_TIMEOUT_MS + 120_000,
);
