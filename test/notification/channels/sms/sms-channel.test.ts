/**
 * SmsChannel: backends by name (primary flag, else first), errors for none and unknown, health checks,
 * and the in-process multi-recipient send against the Twilio-style peer (every recipient sent).
 */
import { ConfigError } from '../../../../shared/config';
import { FailedPreconditionError, InvalidArgumentError } from '../../../../shared/errors';
import { MAX_SMS_RECIPIENTS, SmsChannel } from '../../../../services/notification/channels/sms/sms-channel';
import { MAX_SMS_BODY_CHARS } from '../../../../services/notification/channels/sms/sms-message';
import { gatewayConfig, startTwilioPeer, twilioError, type TwilioPeer } from './twilio-peer';

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}

async function rejected(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

describe('SmsChannel backends', () => {
  const gw = gatewayConfig({ baseUrl: 'http://127.0.0.1:9' });

  it('serves the backend marked primary for unnamed use, and each backend by name', async () => {
    const sms = SmsChannel.configure([
      { name: 'a', sms_gateway: gw },
      { name: 'b', primary: true, sms_gateway: { ...gw, from_number: '+15550002222' } },
    ]);
    expect(sms.get().name).toBe('b');
    expect(sms.get('').name).toBe('b');
    expect(sms.get('a').fromNumber).toBe(gw.from_number);
    expect(sms.drivers().map((d) => d.name)).toEqual(['a', 'b']);
    expect(sms.healthChecks().map((c) => c.name)).toEqual(['notifications.sms.a', 'notifications.sms.b']);
    await sms.close();
  });

  it('without a primary flag, the first backend is the primary', async () => {
    const sms = SmsChannel.configure([
      { name: 'first', sms_gateway: gw },
      { name: 'second', sms_gateway: gw },
    ]);
    expect(sms.get().name).toBe('first');
    await sms.close();
  });

  it('an unknown backend is INVALID_ARGUMENT naming backend', async () => {
    const sms = SmsChannel.configure([{ name: 'a', sms_gateway: gw }]);
    const err = thrown(() => sms.get('nope'));
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect(err).toMatchObject({
      field: 'backend',
      message: expect.stringContaining('unknown SMS backend "nope"'),
    });
    await sms.close();
  });

  it('with no backend, get and send are FAILED_PRECONDITION "no SMS backend configured"', async () => {
    const sms = SmsChannel.configure();
    expect(thrown(() => sms.get())).toEqual(new FailedPreconditionError('no SMS backend configured'));
    const err = await rejected(sms.send('+15551234567', 'hi'));
    expect(err).toBeInstanceOf(FailedPreconditionError);
    expect(sms.healthChecks()).toEqual([]);
  });

  it('a backend list written in code is validated, naming the key', () => {
    const err = thrown(() =>
      SmsChannel.configure([{ name: 's', sms_gateway: { ...gw, from_number: '555 1234' } }]),
    ) as ConfigError;
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toContain('notification.sms_backends[0].sms_gateway.from_number');
  });
});

describe('SmsChannel.send (SMSChannelProtocol, in process)', () => {
  let peer: TwilioPeer;
  let sms: SmsChannel;
  beforeEach(async () => {
    peer = await startTwilioPeer();
    // 20 calls at once on a loaded 2-core machine (the whole suite) can take longer than the stand-in's
    // usual 2 s: these tests are about results, not timeouts.
    sms = SmsChannel.configure([
      { name: 'twilio', sms_gateway: gatewayConfig(peer, { timeout_ms: 15_000 }) },
    ]);
  });
  afterEach(async () => {
    await sms.close();
    await peer.close();
  });

  it('sends every recipient of a multi-recipient send, one provider call each, one result each in order', async () => {
    const to = Array.from({ length: 20 }, (_, i) => `+1555000${String(1000 + i)}`);
    const results = await sms.send(to, 'Maintenance at 22:00');
    expect(results.map((r) => r.to)).toEqual(to);
    // The ones that were not sent, printed whole when there are any.
    expect(results.filter((r) => !(r.class === 'sent' && /^SM\d+$/.test(r.providerReference ?? '')))).toEqual(
      [],
    );
    expect(new Set(results.map((r) => r.providerReference)).size).toBe(20);
    expect(peer.requests.map((r) => r.form.To).sort()).toEqual([...to].sort());
    expect(
      peer.requests.every((r) => r.form.Body === 'Maintenance at 22:00' && r.form.From === '+15550001111'),
    ).toBe(true);
  });

  it('reports each recipient on its own: one refused number does not stop the others', async () => {
    peer.script.push({ kind: 'answer', status: 201, body: { sid: 'SM-first' } });
    peer.script.push(twilioError(400, 21610, 'Attempt to send to unsubscribed recipient'));
    // One call at a time, so the script's answers meet the recipients in order.
    const results: unknown[] = [];
    for (const to of ['+15551110001', '+15551110002', '+15551110003'])
      results.push(...(await sms.send(to, 'hi')));
    expect(results).toMatchObject([
      { to: '+15551110001', class: 'sent', providerReference: 'SM-first' },
      { to: '+15551110002', class: 'recipient_failure', providerCode: '21610' },
      { to: '+15551110003', class: 'sent' },
    ]);
  });

  it('checks every recipient and the body before the first call: bad input sends nothing', async () => {
    const bad = await rejected(sms.send(['+15551110001', '0555 123'], 'hi'));
    expect(bad).toMatchObject({ field: 'recipients[1]' });
    expect(await rejected(sms.send([], 'hi'))).toMatchObject({ field: 'recipients' });
    expect(await rejected(sms.send('+15551110001', ''))).toMatchObject({ field: 'body' });
    expect(await rejected(sms.send('+15551110001', 'x'.repeat(MAX_SMS_BODY_CHARS + 1)))).toMatchObject({
      field: 'body',
      message: 'body is longer than 1600 characters',
    });
    expect(await rejected(sms.send('+15551110001', 'hi', { backend: 'other' }))).toMatchObject({
      field: 'backend',
    });
    expect(peer.requests).toHaveLength(0);
  });

  it('refuses a list one over MAX_SMS_RECIPIENTS before any call', async () => {
    const to = Array.from({ length: MAX_SMS_RECIPIENTS + 1 }, (_, i) => `+1555${String(1_000_000 + i)}`);
    expect(await rejected(sms.send(to, 'hi'))).toMatchObject({
      field: 'recipients',
      message: `recipients: ${MAX_SMS_RECIPIENTS + 1} recipients, over the limit of ${MAX_SMS_RECIPIENTS}`,
    });
    expect(peer.accepted).toBe(0);
  });

  it('accepts a body of exactly 1,600 characters, counting an emoji as one', async () => {
    const body = '🎉'.repeat(MAX_SMS_BODY_CHARS);
    const [result] = await sms.send('+15551110001', body);
    expect(result).toMatchObject({ class: 'sent' });
    expect(peer.requests[0]!.form.Body).toBe(body);
  });
});
