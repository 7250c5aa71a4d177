/**
 * The sms_gateway driver against a local Twilio-style Messages API (Basic auth and form fields
 * checked by the peer): what is sent, how each answer classifies, timeouts, connection failures, the
 * bounded answer read, the auth token kept out of every reason, and the health probe.
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';

import { SmsGatewayDriverConfigSchema } from '../../../../services/notification/channels/sms/config';
import { SmsGatewayDriver } from '../../../../services/notification/channels/sms/sms-gateway-driver';
import type { DriverSendContext } from '../../../../services/notification/delivery/driver';
import {
  ACCOUNT_SID,
  AUTH_TOKEN,
  gatewayConfig,
  startTwilioPeer,
  twilioError,
  type TwilioPeer,
} from './twilio-peer';

const TO = '+15551234567';
const FROM = '+15550001111';

function attempt(signal: AbortSignal = new AbortController().signal): DriverSendContext {
  return { deliveryId: randomUUID(), attempt: 1, signal };
}

function driver(peer: Pick<TwilioPeer, 'baseUrl'>, extra: Record<string, unknown> = {}): SmsGatewayDriver {
  return new SmsGatewayDriver({
    name: 'twilio',
    config: SmsGatewayDriverConfigSchema.parse(gatewayConfig(peer, extra)),
  });
}

describe('the sms_gateway driver', () => {
  let peer: TwilioPeer;
  let d: SmsGatewayDriver;
  beforeEach(async () => {
    peer = await startTwilioPeer();
    d = driver(peer);
  });
  afterEach(async () => {
    await d.close();
    await peer.close();
  });

  it('sends from its own from_number whatever the stored payload says (a delivery failed over from another backend)', async () => {
    const backup = driver(peer, { from_number: '+15550009999' });
    try {
      // A record written before drivers stamped their own sender still carries the first backend's.
      expect(await backup.send({ to: TO, from: FROM, body: 'old record' }, attempt())).toMatchObject({
        class: 'sent',
      });
      expect(await backup.send({ to: TO, body: 'new record' }, attempt())).toMatchObject({ class: 'sent' });
    } finally {
      await backup.close();
    }
    expect(peer.requests.map((r) => [r.form.Body, r.form.From])).toEqual([
      ['old record', '+15550009999'],
      ['new record', '+15550009999'],
    ]);
  });

  it('posts To, From and Body as a form with Basic auth and answers sent with the message sid', async () => {
    const outcome = await d.send({ to: TO, from: FROM, body: 'Your code is 123456 & ünïcödé 🎉' }, attempt());
    expect(outcome).toEqual({
      class: 'sent',
      providerCode: '201',
      providerReference: expect.stringMatching(/^SM\d{32}$/),
    });
    expect(peer.requests).toHaveLength(1);
    const [req] = peer.requests;
    expect(req!.path).toBe(`/2010-04-01/Accounts/${ACCOUNT_SID}/Messages.json`);
    expect(req!.form).toEqual({ To: TO, From: FROM, Body: 'Your code is 123456 & ünïcödé 🎉' });
    expect(peer.refused).toBe(0);
  });

  it('reuses one keep-alive connection for consecutive sends', async () => {
    for (let i = 0; i < 3; i++) await d.send({ to: TO, from: FROM, body: `m${i}` }, attempt());
    expect(peer.requests).toHaveLength(3);
    // Every request arrived from the same client port: one connection, kept open by the agent.
    expect(new Set(peer.requests.map((r) => r.remotePort)).size).toBe(1);
    expect(peer.requests[0]!.remotePort).toBeGreaterThan(0);
  });

  it('answers 400 code 21211 as a recipient failure with the provider code and message', async () => {
    peer.script.push(twilioError(400, 21211, "The 'To' number +1555 is not a valid phone number."));
    const outcome = await d.send({ to: TO, from: FROM, body: 'hi' }, attempt());
    expect(outcome).toMatchObject({ class: 'recipient_failure', providerCode: '21211' });
    expect(outcome.reason).toContain('is not a valid phone number');
  });

  it('answers 429 with Retry-After as rate limited with the delay', async () => {
    peer.script.push({
      ...twilioError(429, 20429, 'Too Many Requests'),
      headers: { 'Retry-After': '2' },
    } as never);
    const outcome = await d.send({ to: TO, from: FROM, body: 'hi' }, attempt());
    expect(outcome).toMatchObject({ class: 'rate_limited', retryAfterMs: 2000, providerCode: '20429' });
  });

  it('answers 500 as retryable', async () => {
    peer.script.push(twilioError(500, 20500, 'An internal server error has occurred'));
    expect(await d.send({ to: TO, from: FROM, body: 'hi' }, attempt())).toMatchObject({ class: 'retryable' });
  });

  it('wrong credentials are a permanent failure, and the token never appears in the reason', async () => {
    const wrong = driver(peer, { auth_token: 'not-the-token-secret' });
    try {
      const outcome = await wrong.send({ to: TO, from: FROM, body: 'hi' }, attempt());
      expect(outcome).toMatchObject({ class: 'permanent', providerCode: '20003' });
      expect(outcome.reason).toContain('credentials refused');
      expect(JSON.stringify(outcome)).not.toContain('not-the-token-secret');
    } finally {
      await wrong.close();
    }
  });

  it('scrubs the auth token when a provider echoes it in its message', async () => {
    peer.script.push(twilioError(400, 21602, `bad request from ${ACCOUNT_SID}:${AUTH_TOKEN}`));
    const outcome = await d.send({ to: TO, from: FROM, body: 'hi' }, attempt());
    expect(outcome.reason).toContain('[REDACTED]');
    expect(JSON.stringify(outcome)).not.toContain(AUTH_TOKEN);
  });

  it('a provider that never answers is retryable once timeout_ms passes', async () => {
    const quick = driver(peer, { timeout_ms: 200 });
    peer.script.push({ kind: 'hang' });
    try {
      const outcome = await quick.send({ to: TO, from: FROM, body: 'hi' }, attempt());
      expect(outcome).toMatchObject({ class: 'retryable', providerCode: 'timeout' });
    } finally {
      await quick.close();
    }
  });

  it('an aborted attempt ends at once as retryable', async () => {
    peer.script.push({ kind: 'hang' });
    const ac = new AbortController();
    const sending = d.send({ to: TO, from: FROM, body: 'hi' }, attempt(ac.signal));
    setTimeout(() => ac.abort(), 20);
    expect(await sending).toMatchObject({ class: 'retryable', providerCode: 'aborted' });
  });

  it('a refused connection is retryable with the socket error', async () => {
    const closed = await startTwilioPeer();
    await closed.close();
    const gone = driver(closed);
    try {
      expect(await gone.send({ to: TO, from: FROM, body: 'hi' }, attempt())).toMatchObject({
        class: 'retryable',
        providerCode: 'ECONNREFUSED',
      });
    } finally {
      await gone.close();
    }
  });

  it('a malformed stored payload is permanent without a provider call', async () => {
    const outcome = await d.send({ to: '5551234', from: FROM, body: 'hi' }, attempt());
    expect(outcome).toMatchObject({
      class: 'permanent',
      reason: expect.stringContaining('malformed SMS payload'),
    });
    expect(peer.requests).toHaveLength(0);
  });

  it('after close a send is retryable without connecting', async () => {
    await d.close();
    expect(await d.send({ to: TO, from: FROM, body: 'hi' }, attempt())).toMatchObject({ class: 'retryable' });
    expect(peer.requests).toHaveLength(0);
  });

  it('the probe is healthy against the API and degraded when the credentials are refused', async () => {
    expect(await d.checkHealth()).toMatchObject({
      status: 'healthy',
      details: { backend: 'twilio', driver: 'sms_gateway' },
    });
    const wrong = driver(peer, { auth_token: 'wrong-token-xyz' });
    try {
      const result = await wrong.checkHealth();
      expect(result).toMatchObject({ status: 'degraded', message: expect.stringContaining('HTTP 401') });
      expect(JSON.stringify(result)).not.toContain('wrong-token-xyz');
    } finally {
      await wrong.close();
    }
  });

  it('the probe is degraded when nothing answers', async () => {
    const closed = await startTwilioPeer();
    await closed.close();
    const gone = driver(closed);
    try {
      expect(await gone.checkHealth()).toMatchObject({
        status: 'degraded',
        message: expect.stringContaining('connection failed'),
      });
    } finally {
      await gone.close();
    }
  });
});

describe('the sms_gateway driver against a huge answer', () => {
  it('reads at most 64 KiB of an answer and still classifies by its status', async () => {
    let written = 0;
    const server = http.createServer((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      // 8 MiB promised; the driver must stop reading long before.
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const pump = () => {
        while (written < 8 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      res.on('error', () => undefined);
      pump();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const d = driver({ baseUrl: `http://127.0.0.1:${(server.address() as { port: number }).port}` });
    try {
      const outcome = await d.send({ to: TO, from: FROM, body: 'hi' }, attempt());
      expect(outcome).toMatchObject({ class: 'retryable', providerCode: '500' });
      expect(written).toBeLessThan(8 * 1024 * 1024);
    } finally {
      await d.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
