/**
 * RetryingMailer in-process, without the service: a real SMTP mailer against the real smtp-server
 * peer, retried by the delivery pipeline's policy and tracked in a delivery store.
 */
import { InvalidArgumentError, UnavailableError } from '../../../../shared/errors';
import { RetryingMailer } from '../../../../services/notification/channels/email/retrying-mailer';
import { Mailable } from '../../../../services/notification/channels/email/mailable';
import { SmtpMailer } from '../../../../services/notification/channels/email/smtp-mailer';
import { InMemoryDeliveryStore } from '../../../../services/notification/delivery/memory-store';
import { startSmtpPeer, type SmtpPeer } from '../../../support/smtp-peer';
import { FROM, smtpConfig } from './support';

/** Fast retries: the backoff is real, only short. */
const FAST = {
  base_delay_ms: 5,
  max_delay_ms: 20,
  poll_interval_ms: 20,
  lease_seconds: 10,
  attempt_timeout_ms: 5000,
};

let peer: SmtpPeer;
let smtp: SmtpMailer;
const open: RetryingMailer[] = [];

function retrying(config: Record<string, number> = {}, store?: InMemoryDeliveryStore): RetryingMailer {
  const m = new RetryingMailer(smtp, { config: { ...FAST, ...config }, store });
  open.push(m);
  return m;
}

function hello(to = 'jane@example.com'): Mailable {
  return new Mailable().to(to).subject('Hello').text('Hi Jane');
}

function messageIdOf(raw: Buffer): string | undefined {
  return /^Message-ID:\s*(<[^>]+>)/im.exec(raw.toString('utf8'))?.[1];
}

beforeAll(async () => {
  peer = await startSmtpPeer();
  smtp = new SmtpMailer({ name: 'relay', fromEmail: FROM, config: smtpConfig(peer.port, { pool: false }) });
});
afterAll(async () => {
  await smtp?.close();
  await peer?.close();
});
beforeEach(() => {
  peer.received.length = 0;
  peer.rejected.length = 0;
  peer.script.length = 0;
  peer.dataCount = 0;
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((m) => m.close()));
});

describe('RetryingMailer', () => {
  test('the relay answering 451 then 250: resolves sent after 2 attempts, both with one Message-ID', async () => {
    peer.script.push({ kind: 'reply', code: 451, text: '4.7.1 Try again later' });
    const delivery = await retrying().send(hello());
    expect(delivery.status).toBe('sent');
    expect(delivery.attempts.map((a) => a.outcome)).toEqual(['retryable', 'sent']);
    expect(delivery.sentAt).toBeInstanceOf(Date);
    expect(delivery.messageId).toMatch(/^<[0-9a-f-]{36}@sender\.example\.com>$/);
    expect(peer.rejected.map(messageIdOf)).toEqual([delivery.messageId]);
    expect(peer.received.map((m) => m.parsed.messageId)).toEqual([delivery.messageId]);
  });

  test('the relay answering 550: resolves failed after 1 attempt, not retried', async () => {
    peer.script.push({ kind: 'reply', code: 550, text: '5.1.1 No such user' });
    const delivery = await retrying().send(hello('nobody@example.com'));
    expect(delivery.status).toBe('failed');
    expect(delivery.attempts).toHaveLength(1);
    expect(delivery.attempts[0]!.outcome).toBe('recipient_failure');
    expect(delivery.lastError).toMatch(/550|no such user/i);
    expect(peer.dataCount).toBe(1);
  });

  test('retries exhausted: failed after max_attempts with the last reason', async () => {
    for (let i = 0; i < 3; i++) peer.script.push({ kind: 'reply', code: 451, text: `4.3.0 busy ${i}` });
    const delivery = await retrying({ max_attempts: 2 }).send(hello());
    expect(delivery.status).toBe('failed');
    expect(delivery.attempts.map((a) => a.outcome)).toEqual(['retryable', 'retryable']);
    expect(delivery.lastError).toMatch(/busy 1/);
    expect(peer.dataCount).toBe(2);
  });

  test('every delivery is tracked in the given store, attempts included', async () => {
    const store = new InMemoryDeliveryStore();
    const delivery = await retrying({}, store).send(hello());
    const record = await store.get(delivery.id);
    expect(record?.status).toBe('sent');
    expect(record?.channel).toBe('email');
    expect(record?.backend).toBe('relay');
    expect(record?.maskedRecipient).toBe('j***@example.com');
    expect((record?.payload as { messageId: string }).messageId).toBe(delivery.messageId);
  });

  test('an invalid Mailable is InvalidArgumentError and records nothing', async () => {
    const m = retrying();
    await expect(m.send(new Mailable().to('bob@').subject('x').text('y'))).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    expect((await m.pipeline.list()).deliveries).toEqual([]);
    expect(peer.dataCount).toBe(0);
  });

  test('the same idempotency key with the same message returns the first delivery and sends once', async () => {
    const m = retrying();
    const first = await m.send(hello(), { idempotencyKey: 'k1' });
    const again = await m.send(hello(), { idempotencyKey: 'k1' });
    expect(again.id).toBe(first.id);
    expect(again.messageId).toBe(first.messageId);
    expect(peer.received).toHaveLength(1);
  });

  test('closed while a send waits for its retry: the send ends UNAVAILABLE and the record stays queued', async () => {
    const m = retrying({ base_delay_ms: 60000, max_delay_ms: 60000 });
    // Full jitter can draw a zero delay: every attempt is refused, so the record only ever waits.
    for (let i = 0; i < 5; i++) peer.script.push({ kind: 'reply', code: 451, text: '4.7.1 later' });
    const sending = m.send(hello());
    const outcome = sending.catch((err: unknown) => err);
    while (peer.dataCount === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    const [record] = (await m.pipeline.list()).deliveries;
    while ((await m.pipeline.get(record!.id)).attempts.length === 0) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await m.close();
    expect(await outcome).toBeInstanceOf(UnavailableError);
    expect((await m.pipeline.get(record!.id)).status).toBe('retrying');
    await expect(m.send(hello())).rejects.toBeInstanceOf(UnavailableError);
  });
});
