/**
 * The http_api mailer against a local server speaking the SendGrid v3 mail-send protocol.
 */
import { MAX_ANSWER_BYTES } from '../../../../services/notification/channels/http-request';
import { HttpApiDriverConfigSchema } from '../../../../services/notification/channels/email/config';
import { HttpApiMailer } from '../../../../services/notification/channels/email/http-api-mailer';
import { waitFor } from '../../../support/wait';
import { attempt, FROM, outbound, simpleEmail } from './support';
import { startV3Peer, type V3Peer } from './v3-peer';

const API_KEY = 'SG.test-key-0123456789abcdef';

/** Recorded SendGrid error bodies. */
const SENDGRID_400 = JSON.stringify({
  errors: [
    {
      message:
        'The from object must be provided for every email send. It is an object that requires the email parameter, but may also contain a name parameter.',
      field: 'from',
      help: 'http://sendgrid.com/docs/API_Reference/Web_API_v3/Mail/errors.html#message.from',
    },
  ],
});
const SENDGRID_401 = JSON.stringify({
  errors: [
    { message: 'The provided authorization grant is invalid, expired, or revoked', field: null, help: null },
  ],
});
const SENDGRID_BAD_TO = JSON.stringify({
  errors: [
    {
      message: 'Does not contain a valid address.',
      field: 'personalizations.0.to.0.email',
      help: 'http://sendgrid.com/docs/API_Reference/Web_API_v3/Mail/errors.html#message.personalizations.to',
    },
  ],
});

describe('HttpApiMailer against a v3 peer', () => {
  let peer: V3Peer;
  let mailer: HttpApiMailer;

  beforeEach(async () => {
    peer = await startV3Peer();
    mailer = new HttpApiMailer({
      name: 'api',
      fromEmail: FROM,
      config: HttpApiDriverConfigSchema.parse({ base_url: peer.baseUrl, api_key: API_KEY, timeout_ms: 1000 }),
    });
  });

  afterEach(async () => {
    await mailer.close();
    await peer.close();
  });

  it("puts the backend from_name on a message without a display name; the message's own name wins", async () => {
    const named = new HttpApiMailer({
      name: 'named',
      fromEmail: 'desk@second.example.com',
      fromName: 'Second Desk',
      config: HttpApiDriverConfigSchema.parse({ base_url: peer.baseUrl, api_key: API_KEY, timeout_ms: 1000 }),
    });
    try {
      await named.send(simpleEmail(), attempt());
      await named.send(
        simpleEmail((m) => m.fromName('Acme')),
        attempt(),
      );
    } finally {
      await named.close();
    }
    expect(peer.requests.map((r) => (JSON.parse(r.body) as { from: unknown }).from)).toEqual([
      { email: 'desk@second.example.com', name: 'Second Desk' },
      { email: 'desk@second.example.com', name: 'Acme' },
    ]);
  });

  it('posts the v3 body with the bearer key; 202 is sent with X-Message-Id as the reference', async () => {
    const payload = outbound((m) =>
      m
        .to('Jane Doe <jane@example.com>')
        .cc('carl@example.com')
        .bcc('audit@example.org')
        .fromName('Acme')
        .replyTo('support@acme.example.com')
        .text('plain')
        .html('<p>rich</p>')
        .header('X-Campaign', 'spring')
        .attach({ filename: 'a.bin', content: Buffer.from([0, 1, 2, 255]) }),
    );
    const ctx = attempt();

    const outcome = await mailer.send(payload, ctx);

    expect(outcome).toEqual({ class: 'sent', providerReference: 'msg-1', providerCode: '202' });
    const [req] = peer.requests;
    expect(req!.method).toBe('POST');
    expect(req!.path).toBe('/v3/mail/send');
    expect(req!.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(req!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(req!.body)).toEqual({
      personalizations: [
        {
          to: [{ email: 'jane@example.com', name: 'Jane Doe' }],
          cc: [{ email: 'carl@example.com' }],
          bcc: [{ email: 'audit@example.org' }],
        },
      ],
      from: { email: FROM, name: 'Acme' },
      reply_to: { email: 'support@acme.example.com' },
      subject: 'Hello',
      content: [
        { type: 'text/plain', value: 'plain' },
        { type: 'text/html', value: '<p>rich</p>' },
      ],
      attachments: [
        {
          content: 'AAEC/w==',
          filename: 'a.bin',
          type: 'application/octet-stream',
          disposition: 'attachment',
        },
      ],
      headers: { 'X-Campaign': 'spring', 'Message-ID': payload.messageId },
      custom_args: { delivery_id: ctx.deliveryId },
    });
  });

  it('400 with errors is permanent, with the first error message as the reason', async () => {
    peer.script.push({ kind: 'answer', status: 400, body: SENDGRID_400 });

    const outcome = await mailer.send(simpleEmail(), attempt());

    expect(outcome.class).toBe('permanent');
    expect(outcome.providerCode).toBe('400');
    expect(outcome.reason).toMatch(/^request refused \(HTTP 400\): The from object must be provided/);
  });

  it('400 naming a personalization address is a recipient failure', async () => {
    peer.script.push({ kind: 'answer', status: 400, body: SENDGRID_BAD_TO });

    const outcome = await mailer.send(simpleEmail(), attempt());

    expect(outcome.class).toBe('recipient_failure');
    expect(outcome.reason).toContain('Does not contain a valid address.');
  });

  it('401 is permanent and the reason never holds the key, even when the API echoes it', async () => {
    peer.script.push({
      kind: 'answer',
      status: 401,
      body: JSON.stringify({ errors: [{ message: `bad grant Bearer ${API_KEY}` }] }),
    });

    const outcome = await mailer.send(simpleEmail(), attempt());

    expect(outcome.class).toBe('permanent');
    expect(outcome.reason).toContain('API key missing or invalid');
    expect(JSON.stringify(outcome)).not.toContain(API_KEY);
    expect(outcome.reason).toContain('[REDACTED]');
  });

  it('401 with the recorded SendGrid body', async () => {
    peer.script.push({ kind: 'answer', status: 401, body: SENDGRID_401 });

    const outcome = await mailer.send(simpleEmail(), attempt());

    expect(outcome.reason).toBe(
      'API key missing or invalid (HTTP 401): The provided authorization grant is invalid, expired, or revoked',
    );
  });

  it('429 with Retry-After in seconds is rate limited with that delay', async () => {
    peer.script.push({ kind: 'answer', status: 429, headers: { 'Retry-After': '7' }, body: '' });

    const outcome = await mailer.send(simpleEmail(), attempt());

    expect(outcome).toMatchObject({ class: 'rate_limited', retryAfterMs: 7000, providerCode: '429' });
  });

  it('429 with Retry-After as an HTTP date is rate limited until that date', async () => {
    const at = new Date(Date.now() + 120_000);
    peer.script.push({ kind: 'answer', status: 429, headers: { 'Retry-After': at.toUTCString() }, body: '' });

    const outcome = await mailer.send(simpleEmail(), attempt());

    expect(outcome.class).toBe('rate_limited');
    // The date has whole seconds: the delay lies within the two minutes, not at 0 and not beyond.
    expect(outcome.retryAfterMs).toBeGreaterThan(100_000);
    expect(outcome.retryAfterMs).toBeLessThanOrEqual(120_000);
  });

  it('500 is retryable; 503 honours Retry-After', async () => {
    peer.script.push({ kind: 'answer', status: 500, body: '{"errors":[{"message":"internal error"}]}' });
    peer.script.push({ kind: 'answer', status: 503, headers: { 'Retry-After': '30' }, body: '' });

    const first = await mailer.send(simpleEmail(), attempt(1));
    const second = await mailer.send(simpleEmail(), attempt(2));

    expect(first).toMatchObject({
      class: 'retryable',
      providerCode: '500',
      reason: 'provider error (HTTP 500): internal error',
    });
    expect(first.retryAfterMs).toBeUndefined();
    expect(second).toMatchObject({ class: 'retryable', retryAfterMs: 30_000 });
  });

  it('a hang past timeout_ms is retryable, and the next send still works', async () => {
    peer.script.push({ kind: 'hang' });

    const hung = await mailer.send(simpleEmail(), attempt(1));
    const next = await mailer.send(simpleEmail(), attempt(2));

    expect(hung).toMatchObject({
      class: 'retryable',
      reason: 'no answer within timeout_ms',
      providerCode: 'timeout',
    });
    expect(next.class).toBe('sent');
  });

  it('an error body over the read bound is cut, and the answer still classifies by its status', async () => {
    const huge = JSON.stringify({ errors: [{ message: 'x'.repeat(MAX_ANSWER_BYTES * 4) }] });
    peer.script.push({ kind: 'answer', status: 400, body: huge });

    const outcome = await mailer.send(simpleEmail(), attempt());

    expect(outcome).toMatchObject({ class: 'permanent', reason: 'request refused (HTTP 400)' });
  });

  it('an aborted attempt is retryable', async () => {
    peer.script.push({ kind: 'hang' });
    const controller = new AbortController();
    const sending = mailer.send(simpleEmail(), attempt(1, controller.signal));
    await waitForRequests(peer, 1);
    controller.abort(new Error('shutdown'));

    expect(await sending).toMatchObject({ class: 'retryable', providerCode: 'aborted' });
  });

  it('a refused connection is retryable', async () => {
    await peer.close();

    const outcome = await mailer.send(simpleEmail(), attempt());

    expect(outcome).toMatchObject({ class: 'retryable', reason: 'connection failed (ECONNREFUSED)' });
  });

  it('after close a send is retryable and never reaches the API', async () => {
    await mailer.close();

    const outcome = await mailer.send(simpleEmail(), attempt());

    expect(outcome).toMatchObject({ class: 'retryable' });
    expect(peer.requests).toHaveLength(0);
  });

  it('is healthy when the API answers with any status, degraded when it does not answer', async () => {
    peer.script.push({ kind: 'answer', status: 404, body: '' });
    const up = await mailer.checkHealth();
    await peer.close();
    const down = await mailer.checkHealth();

    expect(up).toMatchObject({ status: 'healthy', details: { backend: 'api', driver: 'http_api' } });
    expect(peer.requests[0]!.headers.authorization).toBeUndefined();
    expect(down.status).toBe('degraded');
    expect(down.message).toMatch(/^mail API check failed: connection failed \(ECONN(REFUSED|RESET)\)$/);
  });
});

async function waitForRequests(peer: V3Peer, n: number): Promise<void> {
  await waitFor(() => peer.requests.length >= n, `${n} requests`);
}
