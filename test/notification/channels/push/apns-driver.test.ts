/**
 * push_driver_b (APNs) against a local HTTP/2 APNs server that verifies the ES256 provider token with
 * the public key: headers and body, the outcome of each answer, token reuse and renewal, the 4 KB
 * limit, one session for a batch of 1,000, the stream bound, and reconnecting after GOAWAY.
 */
import { randomUUID } from 'node:crypto';
import { ApnsDriver, TOKEN_RENEW_MS } from '../../../../services/notification/channels/push/apns-driver';
import { PushDriverBConfigSchema } from '../../../../services/notification/channels/push/config';
import type { DriverSendContext } from '../../../../services/notification/delivery/driver';
import { silentLogger } from '../../../../shared/logging/logger';
import { ecKeys, startApnsPeer, type ApnsPeer } from './push-peers';

const KEY_ID = 'ABC123DEFG';
const TEAM_ID = 'DEF123GHIJ';
const TOPIC = 'com.example.app';
const keys = ecKeys();

function ctx(): DriverSendContext {
  return { deliveryId: randomUUID(), attempt: 1, signal: new AbortController().signal };
}

function token(i: number): string {
  return i.toString(16).padStart(64, '0');
}

describe('push_driver_b (APNs)', () => {
  let peer: ApnsPeer;
  let driver: ApnsDriver;
  let clock: number;

  function makeDriver(extra: Record<string, unknown> = {}): ApnsDriver {
    return new ApnsDriver({
      name: 'apns',
      logger: silentLogger(),
      clock: { now: () => clock, monotonic: () => clock },
      config: PushDriverBConfigSchema.parse({
        key_id: KEY_ID,
        team_id: TEAM_ID,
        private_key: keys.privatePem,
        topic: TOPIC,
        base_url: peer.baseUrl,
        timeout_ms: 5000,
        ...extra,
      }),
    });
  }

  beforeEach(async () => {
    clock = Date.now();
    peer = await startApnsPeer({ publicKey: keys.publicKey, keyId: KEY_ID, teamId: TEAM_ID, topic: TOPIC });
    driver = makeDriver();
  });
  afterEach(async () => {
    await driver.close();
    await peer.close();
  });

  it('sends the alert, data and options and reports the apns-id', async () => {
    const outcome = await driver.send(
      {
        deviceToken: token(1),
        title: 'Hi',
        body: 'There',
        data: { orderId: '42', aps: 'not-a-replacement' },
        collapseKey: 'order-42',
        ttlSeconds: 60,
        priority: 'normal',
      },
      ctx(),
    );

    expect(outcome.class).toBe('sent');
    expect(outcome.providerReference).toMatch(/^[0-9a-f-]{36}$/);
    const [req] = peer.requests;
    expect(req!.token).toBe(token(1));
    expect(req!.body).toEqual({ orderId: '42', aps: { alert: { title: 'Hi', body: 'There' } } });
    expect(req!.headers['apns-topic']).toBe(TOPIC);
    expect(req!.headers['apns-push-type']).toBe('alert');
    expect(req!.headers['apns-collapse-id']).toBe('order-42');
    expect(req!.headers['apns-expiration']).toBe(String(Math.floor(clock / 1000) + 60));
    expect(req!.headers['apns-priority']).toBe('5');
  });

  it('sends ttl 0 as apns-expiration 0 and high priority as 10', async () => {
    await driver.send({ deviceToken: token(2), body: 'x', ttlSeconds: 0, priority: 'high' }, ctx());
    expect(peer.requests[0]!.headers['apns-expiration']).toBe('0');
    expect(peer.requests[0]!.headers['apns-priority']).toBe('10');
  });

  it.each([
    [410, 'Unregistered', 'recipient_failure'],
    [400, 'BadDeviceToken', 'recipient_failure'],
    [400, 'BadTopic', 'permanent'],
    [403, 'InvalidProviderToken', 'permanent'],
    [429, 'TooManyRequests', 'rate_limited'],
    [500, 'InternalServerError', 'retryable'],
    [503, 'ServiceUnavailable', 'retryable'],
  ] as const)('HTTP %i %s from the server is %s', async (status, reason, expected) => {
    peer.respond = () => ({ status, reason });
    const outcome = await driver.send({ deviceToken: token(3), body: 'x' }, ctx());
    expect(outcome.class).toBe(expected);
    expect(outcome.providerCode).toBe(reason);
    expect(outcome.reason).toContain(reason);
  });

  it('reuses the provider token, renews it after the renewal age', async () => {
    await driver.send({ deviceToken: token(4), body: 'x' }, ctx());
    await driver.send({ deviceToken: token(5), body: 'x' }, ctx());
    expect(peer.providerTokens.size).toBe(1);
    clock += TOKEN_RENEW_MS + 1000;
    await driver.send({ deviceToken: token(6), body: 'x' }, ctx());
    expect(peer.providerTokens.size).toBe(2);
  });

  it('renews the token and retries once on ExpiredProviderToken', async () => {
    await driver.send({ deviceToken: token(7), body: 'x' }, ctx());
    let refused = 0;
    peer.respond = () => (refused++ === 0 ? { status: 403, reason: 'ExpiredProviderToken' } : undefined);
    clock += 1000; // a new iat, so the renewed token differs
    const outcome = await driver.send({ deviceToken: token(8), body: 'x' }, ctx());
    expect(outcome.class).toBe('sent');
    expect(refused).toBe(2);
    expect(peer.providerTokens.size).toBe(2);
  });

  it('refuses a payload over 4 KB before sending', async () => {
    const outcome = await driver.send({ deviceToken: token(9), body: 'x'.repeat(4100) }, ctx());
    expect(outcome.class).toBe('permanent');
    expect(outcome.reason).toContain('4 KB');
    expect(peer.requests).toHaveLength(0);
  });

  it('a batch of 1,000 with 10 unregistered tokens: 990 sent, 10 recipient failures, one session', async () => {
    const payloads = Array.from({ length: 1000 }, (_, i) => ({
      deviceToken: token(1000 + i),
      body: `n${i}`,
    }));
    for (let i = 5; i < 1000; i += 100) peer.unregistered.add(token(1000 + i));

    const outcomes = await driver.sendBatch(payloads, ctx());

    expect(outcomes).toHaveLength(1000);
    expect(outcomes.filter((o) => o.class === 'sent')).toHaveLength(990);
    outcomes.forEach((o, i) =>
      expect(o.class).toBe(peer.unregistered.has(token(1000 + i)) ? 'recipient_failure' : 'sent'),
    );
    expect(peer.sessions).toBe(1);
    expect(driver.sessionsOpened).toBe(1);
  });

  it('never opens more streams than max_concurrent_streams', async () => {
    await driver.close();
    driver = makeDriver({ max_concurrent_streams: 4 });
    peer.delayMs = 5;
    const outcomes = await driver.sendBatch(
      Array.from({ length: 40 }, (_, i) => ({ deviceToken: token(i), body: 'x' })),
      ctx(),
    );
    expect(outcomes.every((o) => o.class === 'sent')).toBe(true);
    expect(peer.maxActive).toBe(4);
  });

  it('reconnects after GOAWAY', async () => {
    expect((await driver.send({ deviceToken: token(10), body: 'x' }, ctx())).class).toBe('sent');
    peer.goaway();
    // The next send may race the GOAWAY frame; the one after it must use a new session.
    await driver.send({ deviceToken: token(11), body: 'x' }, ctx());
    await new Promise((r) => setTimeout(r, 50));
    expect((await driver.send({ deviceToken: token(12), body: 'x' }, ctx())).class).toBe('sent');
    expect(peer.sessions).toBe(2);
  });

  it('a server that is gone is a retryable connection failure, and the health check degrades', async () => {
    await peer.close();
    const outcome = await driver.send({ deviceToken: token(13), body: 'x' }, ctx());
    expect(outcome).toEqual({ class: 'retryable', reason: 'connection failed' });
    const health = await driver.checkHealth();
    expect(health.status).toBe('degraded');
    peer = await startApnsPeer({ publicKey: keys.publicKey, keyId: KEY_ID, teamId: TEAM_ID, topic: TOPIC });
  });

  it('a provider token signed with another key is refused by the server (permanent)', async () => {
    await driver.close();
    const other = ecKeys();
    driver = makeDriver({ private_key: other.privatePem });
    const outcome = await driver.send({ deviceToken: token(14), body: 'x' }, ctx());
    expect(outcome.class).toBe('permanent');
    expect(outcome.providerCode).toBe('InvalidProviderToken');
  });
});
