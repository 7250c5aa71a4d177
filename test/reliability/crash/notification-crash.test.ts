/**
 * Crash (issue 16): the real notification process, its delivery records on real PostgreSQL, killed
 * with SIGKILL under mixed load (SendEmail to a real smtp-server peer and SendSms to the Twilio-style
 * stand-in at once), then restarted on the same database until every acknowledged send is SENT.
 *
 * Targets are what services/notification/delivery/README.md ("Leases and crashes") promises, not
 * more: nothing acknowledged is lost; the only sends that may reach a peer twice are attempts in
 * flight at the kill (the provider accepted, the process died before committing `sent`: the
 * records the dead process still held a lease on), at most 2 x `delivery.concurrency` per backend
 * (calls running plus accepted sends whose outcome was being written, README "Leases and crashes"), and a
 * resend carries the same payload (for email the same Message-ID). An exactly-once promise across
 * a crash would need the provider to deduplicate, which neither SMTP nor the Messages API does.
 */
import { createTestDatabase } from '../../support/database';
import { duplicatedKeys, leasedDeliveries } from '../../support/delivery-records';
import {
  emailServiceEnv,
  notificationClient,
  sendEmails,
  waitForAllSent,
  type SentEmail,
} from '../../support/email-service';
import { startServiceProcess } from '../../support/service-process';
import { createSmtpPeer, type SmtpPeer } from '../../support/smtp-peer';
import { sendSmses, smsServiceEnv, type SentSms } from '../../support/sms-service';
import { waitFor } from '../../support/wait';
import { startTwilioPeer, type TwilioPeer } from '../../notification/channels/sms/twilio-peer';
import { atLeast, atMost, exactly, recordFigures, reported, SOAK } from '../results';

// Bounds against hangs, never speed checks.
const START_TIMEOUT_MS = 60_000;
const SETTLE_TIMEOUT_MS = 60_000;

// As in test/e2e/email-crash.test.ts: a short backoff so the restarted process drains quickly; a
// lease short enough that the dead process's claims are retaken soon after the restart, yet well
// above the attempt timeout, so that on a loaded machine no live attempt loses its lease (that would
// be a resend the README does not allow, and this test would rightly count it).
const DELIVERY = {
  base_delay_ms: 100,
  max_delay_ms: 1000,
  max_attempts: 100,
  lease_seconds: 12,
  attempt_timeout_ms: 8000,
  poll_interval_ms: 200,
  concurrency: 8,
};
/** Leased by one process per backend at most: `concurrency` calls plus `concurrency` outcomes being written. */
const IN_FLIGHT_BOUND = 2 * DELIVERY.concurrency;

// Sends acknowledged on each channel (and received at each peer) before the kill; the soak run lets
// more through first. The submitters stop at the kill, so SENDS is only a cap.
const KILL_AFTER_ACKS = SOAK ? 2000 : 200;
const KILL_AFTER_RECEIVED = SOAK ? 500 : 50;
const SENDS = SOAK ? 20_000 : 5000;
const IN_FLIGHT = 12;

let db: { url: string; drop(): Promise<void> } | undefined;
let smtp: SmtpPeer | undefined;
let sms: TwilioPeer | undefined;

afterAll(async () => {
  await smtp?.stop();
  await sms?.close();
  await db?.drop();
});

test(
  'a SIGKILL under mixed email and SMS load loses no acknowledged send, and resends only what was in flight, unchanged',
  async () => {
    db = await createTestDatabase('crash_mixed');
    smtp = createSmtpPeer();
    await smtp.start();
    sms = await startTwilioPeer();
    const env = {
      ...emailServiceEnv(smtp.port, { url: db.url }, { delivery: DELIVERY }),
      ...smsServiceEnv(sms),
    };

    // 1. Load, then kill -9 once both channels have acknowledged sends and both peers are receiving.
    const first = await startServiceProcess('notification', env, { startTimeoutMs: START_TIMEOUT_MS });
    const client = notificationClient(first.grpcPort);
    let killed = false;
    let emailAcks = 0;
    let smsAcks = 0;
    let ackedEmails: SentEmail[];
    let ackedSms: SentSms[];
    try {
      const stop = () => killed;
      const emails = sendEmails(
        [client],
        Array.from({ length: SENDS }, (_, i) => `crash-email-${i}`),
        IN_FLIGHT,
        { tolerateFailures: true, stop, onAck: () => emailAcks++ },
      );
      const texts = sendSmses(
        [client],
        Array.from({ length: SENDS }, (_, i) => `crash-sms-${i}`),
        IN_FLIGHT,
        { tolerateFailures: true, stop, onAck: () => smsAcks++ },
      );
      await waitFor(
        () =>
          emailAcks >= KILL_AFTER_ACKS &&
          smsAcks >= KILL_AFTER_ACKS &&
          smtp!.acceptedCount >= KILL_AFTER_RECEIVED &&
          sms!.accepted >= KILL_AFTER_RECEIVED,
        'acknowledged sends on both channels and both peers receiving',
        SETTLE_TIMEOUT_MS * (SOAK ? 5 : 1),
      );
      first.child.kill('SIGKILL');
      killed = true;
      // Calls in flight at the kill fail: they were never acknowledged.
      ackedEmails = (await emails).acked;
      ackedSms = (await texts).acked;
    } finally {
      client.close();
      await first.stop('SIGKILL', 1000);
    }

    // The sends in flight at the kill: queued records the dead process still holds a lease on (a
    // worker clears its lease when it records an outcome). Only these may reach a peer twice.
    const leased = await leasedDeliveries(db.url);
    const inFlightEmails = new Set(leased.filter((d) => d.channel === 'email').map((d) => d.key));
    const inFlightSms = new Set(leased.filter((d) => d.channel === 'sms').map((d) => d.key));

    // 2. Restart on the same database; wait until every acknowledged send is SENT.
    const second = await startServiceProcess('notification', env, { startTimeoutMs: START_TIMEOUT_MS });
    const after = notificationClient(second.grpcPort);
    try {
      await waitForAllSent(after, ackedEmails.length + ackedSms.length, SETTLE_TIMEOUT_MS);
    } finally {
      after.close();
      await second.stop('SIGTERM', 10_000);
    }

    // 3. What arrived. Email by Message-ID (and which ids each subject arrived under); SMS by its
    // unique body (one body per delivery id), and which forms each body arrived in.
    const emailsLost = ackedEmails.filter((a) => !smtp!.messageIds.has(a.messageId));
    const emailDups = duplicatedKeys(smtp.messageIds);
    const idsBySubject = new Map<string, Set<string>>();
    for (const mail of smtp.received) {
      const subject = mail.parsed.subject ?? '';
      idsBySubject.set(subject, (idsBySubject.get(subject) ?? new Set()).add(mail.parsed.messageId ?? ''));
    }
    const emailsUnderAnotherId = ackedEmails.filter((a) => {
      const ids = idsBySubject.get(a.subject);
      return ids !== undefined && (ids.size !== 1 || !ids.has(a.messageId));
    });

    const smsCounts = new Map<string, number>();
    const smsForms = new Map<string, Set<string>>();
    for (const r of sms.requests) {
      const body = r.form.Body ?? '';
      smsCounts.set(body, (smsCounts.get(body) ?? 0) + 1);
      const form = JSON.stringify([r.form.To, r.form.From, r.form.Body]);
      smsForms.set(body, (smsForms.get(body) ?? new Set()).add(form));
    }
    const smsLost = ackedSms.filter((a) => !smsCounts.has(a.body));
    const smsDups = duplicatedKeys(smsCounts);
    const smsResentChanged = [...smsForms.values()].filter((forms) => forms.size > 1).length;

    recordFigures({
      section: 'crash-notification',
      title: 'Crash: kill -9 of a notification process under mixed email + SMS load (PostgreSQL), restart',
      kind: 'crash',
      figures: [
        atLeast('emails acknowledged before the kill', ackedEmails.length, KILL_AFTER_ACKS),
        reported('emails received at the SMTP peer (distinct Message-IDs)', smtp.messageIds.size),
        exactly('emails lost (acknowledged, never received)', emailsLost.length, 0),
        atMost(
          'emails in flight at the kill (leased by the dead process)',
          inFlightEmails.size,
          IN_FLIGHT_BOUND,
        ),
        reported('emails duplicated at the peer (by Message-ID)', emailDups.length),
        exactly(
          'email duplicates not in flight at the kill',
          emailDups.filter((id) => !inFlightEmails.has(id)).length,
          0,
        ),
        exactly('emails that arrived under another Message-ID', emailsUnderAnotherId.length, 0),
        atLeast('SMS acknowledged before the kill', ackedSms.length, KILL_AFTER_ACKS),
        reported('SMS received at the stand-in (distinct deliveries)', smsCounts.size),
        exactly('SMS lost (acknowledged, never received)', smsLost.length, 0),
        atMost('SMS in flight at the kill (leased by the dead process)', inFlightSms.size, IN_FLIGHT_BOUND),
        reported('SMS duplicated at the stand-in (by delivery)', smsDups.length),
        exactly(
          'SMS duplicates not in flight at the kill',
          smsDups.filter((b) => !inFlightSms.has(b)).length,
          0,
        ),
        exactly('SMS resent with other content', smsResentChanged, 0),
      ],
    });

    expect(ackedEmails.length).toBeGreaterThanOrEqual(KILL_AFTER_ACKS);
    expect(ackedSms.length).toBeGreaterThanOrEqual(KILL_AFTER_ACKS);
    expect(emailsLost.map((a) => a.subject)).toEqual([]);
    expect(smsLost.map((a) => a.body)).toEqual([]);
    expect(inFlightEmails.size).toBeLessThanOrEqual(IN_FLIGHT_BOUND);
    expect(inFlightSms.size).toBeLessThanOrEqual(IN_FLIGHT_BOUND);
    expect(emailDups.filter((id) => !inFlightEmails.has(id))).toEqual([]);
    expect(smsDups.filter((b) => !inFlightSms.has(b))).toEqual([]);
    expect(emailsUnderAnotherId.map((a) => a.subject)).toEqual([]);
    expect(smsResentChanged).toBe(0);
  },
  (SOAK ? 10 : 1) * 4 * START_TIMEOUT_MS,
);
