/**
 * The smtp mailer against a real SMTP peer (smtp-server), messages parsed with mailparser.
 */
import net from 'node:net';
import { randomBytes } from 'node:crypto';

import { SmtpMailer } from '../../../../services/notification/channels/email/smtp-mailer';
import { attempt, FROM, outbound, simpleEmail, smtpConfig } from './support';
import { startSmtpPeer, type SmtpPeer } from '../../../support/smtp-peer';

describe('SmtpMailer against a real SMTP peer', () => {
  let peer: SmtpPeer;
  let mailer: SmtpMailer;

  beforeEach(async () => {
    peer = await startSmtpPeer();
    mailer = new SmtpMailer({ name: 'relay', fromEmail: FROM, config: smtpConfig(peer.port) });
  });

  afterEach(async () => {
    await mailer.close();
    await peer.close();
  });

  it('delivers From the backend address, To and Cc in the headers, Bcc only in the envelope', async () => {
    const payload = outbound((m) =>
      m
        .text('Hi Jane')
        .fromName('Acme Billing')
        .to('Jane Doe <jane@example.com>')
        .cc('carl@example.com')
        .bcc('audit@example.org')
        .replyTo('support@acme.example.com')
        .header('X-Campaign', 'spring'),
    );

    const outcome = await mailer.send(payload, attempt());

    expect(outcome).toMatchObject({ class: 'sent', providerReference: '4F2A1C0B3D', providerCode: '250' });
    expect(peer.received).toHaveLength(1);
    const [mail] = peer.received;
    expect(mail!.from).toBe(FROM);
    expect(mail!.recipients.sort()).toEqual(['audit@example.org', 'carl@example.com', 'jane@example.com']);
    expect(mail!.parsed.from?.value).toEqual([{ address: FROM, name: 'Acme Billing' }]);
    const to = mail!.parsed.to as { value: { address: string; name: string }[] };
    expect(to.value.map((v) => v.address).sort()).toEqual(['jane@example.com']);
    expect(to.value[0]!.name).toBe('Jane Doe');
    expect((mail!.parsed.cc as { value: { address: string }[] }).value.map((v) => v.address)).toEqual([
      'carl@example.com',
    ]);
    expect(mail!.parsed.bcc).toBeUndefined();
    expect(mail!.raw.toString('latin1')).not.toMatch(/^bcc:/im);
    expect(mail!.raw.toString('latin1')).not.toContain('audit@example.org');
    expect(mail!.parsed.replyTo?.value[0]?.address).toBe('support@acme.example.com');
    expect(mail!.parsed.headers.get('x-campaign')).toBe('spring');
    expect(mail!.parsed.subject).toBe('Hello');
    expect(mail!.parsed.text?.trim()).toBe('Hi Jane');
  });

  it("puts the backend from_name on a message without a display name; the message's own name wins", async () => {
    const named = new SmtpMailer({
      name: 'named',
      fromEmail: 'desk@second.example.com',
      fromName: 'Second Desk',
      config: smtpConfig(peer.port),
    });
    try {
      await named.send(simpleEmail(), attempt());
      await named.send(
        simpleEmail((m) => m.fromName('Acme Billing')),
        attempt(),
      );
    } finally {
      await named.close();
    }
    expect(peer.received.map((m) => [m.from, m.parsed.from?.value])).toEqual([
      ['desk@second.example.com', [{ address: 'desk@second.example.com', name: 'Second Desk' }]],
      ['desk@second.example.com', [{ address: 'desk@second.example.com', name: 'Acme Billing' }]],
    ]);
  });

  it('sends the payload Message-ID, the same one on a retry after a 451', async () => {
    peer.script.push({ kind: 'reply', code: 451, text: '4.7.1 Try again later' });
    const payload = simpleEmail();

    const first = await mailer.send(payload, attempt(1));
    const second = await mailer.send(payload, attempt(2));

    expect(first).toMatchObject({ class: 'retryable', providerCode: '451' });
    expect(first.reason).toContain('451 4.7.1 Try again later');
    expect(second.class).toBe('sent');
    expect(peer.received).toHaveLength(1);
    expect(peer.received[0]!.parsed.messageId).toBe(payload.messageId);
  });

  it('keeps binary attachments intact', async () => {
    const pdf = randomBytes(200_000);
    const payload = simpleEmail((m) =>
      m
        .attach({ filename: 'invoice.pdf', contentType: 'application/pdf', content: pdf })
        .attach({ filename: 'notes.txt', contentType: 'text/plain', content: 'plain words' }),
    );

    expect((await mailer.send(payload, attempt())).class).toBe('sent');

    const attachments = peer.received[0]!.parsed.attachments;
    expect(attachments.map((a) => [a.filename, a.contentType])).toEqual([
      ['invoice.pdf', 'application/pdf'],
      ['notes.txt', 'text/plain'],
    ]);
    expect(Buffer.compare(attachments[0]!.content, pdf)).toBe(0);
    expect(attachments[1]!.content.toString('utf8')).toBe('plain words');
  });

  it('sends HTML with the plain text derived from it', async () => {
    const payload = outbound((m) => m.to('jane@example.com').html('<h1>Weekly</h1><p>All <b>green</b>.</p>'));

    expect((await mailer.send(payload, attempt())).class).toBe('sent');

    const parsed = peer.received[0]!.parsed;
    expect(parsed.html).toContain('<b>green</b>');
    expect(parsed.text).toContain('All green.');
  });

  it('classifies a 550 at RCPT TO as a recipient failure and delivers nothing', async () => {
    peer.refuse.set('jane@example.com', [
      550,
      '5.1.1 <jane@example.com>: Recipient address rejected: User unknown',
    ]);

    const outcome = await mailer.send(simpleEmail(), attempt());

    expect(outcome).toMatchObject({ class: 'recipient_failure', providerCode: '550' });
    expect(outcome.reason).toContain('User unknown');
    expect(peer.received).toHaveLength(0);
  });

  it('classifies a 554 5.7.1 at DATA as permanent', async () => {
    peer.script.push({ kind: 'reply', code: 554, text: '5.7.1 Message rejected as spam' });

    const outcome = await mailer.send(simpleEmail(), attempt());

    expect(outcome).toMatchObject({ class: 'permanent', providerCode: '554' });
    expect(peer.received).toHaveLength(0);
  });

  it('reports sent with the refused recipients when only some are refused', async () => {
    peer.refuse.set('gone@example.com', [550, '5.1.1 User unknown']);

    const outcome = await mailer.send(
      simpleEmail((m) => m.cc('gone@example.com')),
      attempt(),
    );

    expect(outcome.class).toBe('sent');
    expect(outcome.reason).toBe('accepted for 1 recipients, refused for 1');
    expect(peer.received[0]!.recipients).toEqual(['jane@example.com']);
  });

  it('classifies a connection dropped in the middle of DATA as retryable, and the retry delivers', async () => {
    peer.script.push({ kind: 'drop' });
    const payload = simpleEmail((m) => m.attach({ filename: 'big.bin', content: randomBytes(300_000) }));

    const first = await mailer.send(payload, attempt(1));
    const second = await mailer.send(payload, attempt(2));

    expect(first.class).toBe('retryable');
    expect(peer.dataCount).toBe(2);
    expect(second.class).toBe('sent');
    expect(peer.received).toHaveLength(1);
    expect(peer.received[0]!.parsed.messageId).toBe(payload.messageId);
  });

  it('classifies a refused connection as retryable', async () => {
    await peer.close();

    const outcome = await mailer.send(simpleEmail(), attempt());

    expect(outcome.class).toBe('retryable');
    expect(outcome.reason).toMatch(/^connection failed \(ESOCKET\)|^connection closed/);
  });

  it('is healthy when the relay answers EHLO, and caches the result', async () => {
    const first = await mailer.checkHealth();
    const second = await mailer.checkHealth();

    expect(first).toMatchObject({
      status: 'healthy',
      details: { backend: 'relay', driver: 'smtp', cached: false },
    });
    expect(second.details.cached).toBe(true);
    expect(peer.received).toHaveLength(0);
  });

  it('an aborted attempt sends nothing', async () => {
    const controller = new AbortController();
    controller.abort(new Error('shutdown'));

    const outcome = await mailer.send(simpleEmail(), attempt(1, controller.signal));

    expect(outcome.class).toBe('retryable');
    expect(peer.dataCount).toBe(0);
  });

  it('refuses a damaged stored payload as permanent without connecting', async () => {
    const outcome = await mailer.send({ to: 'nobody' } as never, attempt());

    expect(outcome).toMatchObject({ class: 'permanent' });
    expect(outcome.reason).toMatch(/^malformed email payload/);
    expect(peer.dataCount).toBe(0);
  });
});

describe('SmtpMailer failures without a working relay', () => {
  it('is degraded, not unhealthy, when nothing listens', async () => {
    const closed = await startSmtpPeer();
    await closed.close();
    const mailer = new SmtpMailer({ name: 'down', fromEmail: FROM, config: smtpConfig(closed.port) });

    const health = await mailer.checkHealth();
    await mailer.close();

    expect(health.status).toBe('degraded');
    expect(health.message).toMatch(/^smtp relay check failed/);
  });

  it('classifies a relay that never greets as a retryable timeout', async () => {
    const held = new Set<net.Socket>();
    const silent = net.createServer((s) => held.add(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as net.AddressInfo).port;
    const mailer = new SmtpMailer({
      name: 'silent',
      fromEmail: FROM,
      config: smtpConfig(port, { greeting_timeout_ms: 200 }),
    });

    const outcome = await mailer.send(simpleEmail(), attempt());
    await mailer.close();
    for (const s of held) s.destroy();
    silent.close();

    expect(outcome.class).toBe('retryable');
    expect(outcome.reason).toContain('ETIMEDOUT');
  });

  it('with require_tls, refuses to send to a relay that offers no STARTTLS', async () => {
    const peer = await startSmtpPeer();
    const mailer = new SmtpMailer({
      name: 'tls',
      fromEmail: FROM,
      config: smtpConfig(peer.port, { require_tls: true }),
    });

    const outcome = await mailer.send(simpleEmail(), attempt());
    await mailer.close();
    await peer.close();

    expect(outcome.class).not.toBe('sent');
    expect(peer.received).toHaveLength(0);
  });

  it('over STARTTLS with a self-signed certificate: refused by default, sent with tls_reject_unauthorized false', async () => {
    const peer = await startSmtpPeer({ disabledCommands: [] });
    const strict = new SmtpMailer({ name: 'strict', fromEmail: FROM, config: smtpConfig(peer.port) });
    const lax = new SmtpMailer({
      name: 'lax',
      fromEmail: FROM,
      config: smtpConfig(peer.port, { tls_reject_unauthorized: false, require_tls: true }),
    });

    const refused = await strict.send(simpleEmail(), attempt());
    const sent = await lax.send(simpleEmail(), attempt());
    await strict.close();
    await lax.close();
    await peer.close();

    expect(refused.class).toBe('retryable');
    expect(sent.class).toBe('sent');
    expect(peer.received).toHaveLength(1);
  });
});
