/**
 * push_driver_a (FCM) against a local FCM server: HTTP v1 over HTTP/2 with its OAuth token endpoint
 * verifying the RS256 assertion with the service account's public key (token cached, refused
 * accounts permanent), the legacy protocol with a server key (1,000 tokens per call, one result per
 * token), and the key file form of the config.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PushDriverAConfigSchema } from '../../../../services/notification/channels/push/config';
import { FcmDriver } from '../../../../services/notification/channels/push/fcm-driver';
import type { DriverSendContext } from '../../../../services/notification/delivery/driver';
import { silentLogger } from '../../../../shared/logging/logger';
import { rsaKeys, startFcmPeer, type FcmPeer } from './push-peers';

const PROJECT = 'demo-project';
const CLIENT_EMAIL = 'sender@demo-project.iam.gserviceaccount.com';
const SERVER_KEY = 'AAAA-legacy-server-key';
const keys = rsaKeys();

function ctx(): DriverSendContext {
  return { deliveryId: randomUUID(), attempt: 1, signal: new AbortController().signal };
}

describe('push_driver_a (FCM)', () => {
  let peer: FcmPeer;
  const drivers: FcmDriver[] = [];

  function v1Driver(extra: Record<string, unknown> = {}, privatePem = keys.privatePem): FcmDriver {
    const d = new FcmDriver({
      name: 'fcm',
      logger: silentLogger(),
      config: PushDriverAConfigSchema.parse({
        project_id: PROJECT,
        service_account: { client_email: CLIENT_EMAIL, private_key: privatePem, token_uri: peer.tokenUri },
        base_url: peer.baseUrl,
        timeout_ms: 5000,
        ...extra,
      }),
    });
    drivers.push(d);
    return d;
  }

  function legacyDriver(serverKey = SERVER_KEY): FcmDriver {
    const d = new FcmDriver({
      name: 'fcm-legacy',
      logger: silentLogger(),
      config: PushDriverAConfigSchema.parse({ server_key: serverKey, base_url: peer.baseUrl }),
    });
    drivers.push(d);
    return d;
  }

  beforeEach(async () => {
    peer = await startFcmPeer({
      publicKey: keys.publicKey,
      clientEmail: CLIENT_EMAIL,
      projectId: PROJECT,
      serverKey: SERVER_KEY,
    });
  });
  afterEach(async () => {
    await Promise.all(drivers.splice(0).map((d) => d.close()));
    await peer.close();
  });

  it('v1: gets an access token by the JWT-bearer grant, caches it, sends the message', async () => {
    const driver = v1Driver();
    const first = await driver.send(
      {
        deviceToken: 'tok-1',
        title: 'Hi',
        body: 'There',
        data: { k: 'v' },
        collapseKey: 'c',
        ttlSeconds: 0,
        priority: 'high',
      },
      ctx(),
    );
    await driver.send({ deviceToken: 'tok-2', body: 'again' }, ctx());

    expect(first.class).toBe('sent');
    expect(first.providerReference).toMatch(new RegExp(`^projects/${PROJECT}/messages/`));
    expect(peer.issued).toHaveLength(1);
    expect(peer.requests[0]!.authorization).toBe(`Bearer ${peer.issued[0]}`);
    expect(peer.requests[0]!.body).toEqual({
      message: {
        token: 'tok-1',
        notification: { title: 'Hi', body: 'There' },
        data: { k: 'v' },
        android: { collapse_key: 'c', ttl: '0s', priority: 'HIGH' },
      },
    });
    expect(peer.sessions).toBe(1);
  });

  it('v1: a token that expires soon is renewed', async () => {
    await peer.close();
    peer = await startFcmPeer({
      publicKey: keys.publicKey,
      clientEmail: CLIENT_EMAIL,
      projectId: PROJECT,
      expiresIn: 60,
    });
    const driver = v1Driver();
    await driver.send({ deviceToken: 'a', body: 'x' }, ctx());
    await driver.send({ deviceToken: 'b', body: 'x' }, ctx());
    // 60 s is inside the renewal margin: every send asks for a new one.
    expect(peer.issued).toHaveLength(2);
  });

  it('v1: an assertion signed with another key is refused: permanent, nothing sent', async () => {
    const driver = v1Driver({}, rsaKeys().privatePem);
    const outcome = await driver.send({ deviceToken: 'a', body: 'x' }, ctx());
    expect(outcome.class).toBe('permanent');
    expect(outcome.reason).toContain('OAuth token endpoint refused');
    expect(peer.refusedAssertions).toBe(1);
    expect(peer.requests).toHaveLength(0);
  });

  it('v1: an unreachable token endpoint is retryable', async () => {
    const driver = v1Driver({
      service_account: {
        client_email: CLIENT_EMAIL,
        private_key: keys.privatePem,
        token_uri: 'http://127.0.0.1:1/token',
      },
    });
    const outcome = await driver.send({ deviceToken: 'a', body: 'x' }, ctx());
    expect(outcome.class).toBe('retryable');
  });

  it('v1: UNREGISTERED is a recipient failure, QUOTA_EXCEEDED rate limited, UNAVAILABLE retryable', async () => {
    const driver = v1Driver();
    peer.unregistered.add('dead');
    expect((await driver.send({ deviceToken: 'dead', body: 'x' }, ctx())).class).toBe('recipient_failure');
    const fcmError = (status: number, code: string, errorCode: string) => ({
      status,
      body: {
        error: {
          code: status,
          status: code,
          message: 'm',
          details: [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode }],
        },
      },
    });
    peer.respond = () => fcmError(429, 'RESOURCE_EXHAUSTED', 'QUOTA_EXCEEDED');
    expect((await driver.send({ deviceToken: 'a', body: 'x' }, ctx())).class).toBe('rate_limited');
    peer.respond = () => fcmError(503, 'UNAVAILABLE', 'UNAVAILABLE');
    expect((await driver.send({ deviceToken: 'a', body: 'x' }, ctx())).class).toBe('retryable');
  });

  it('v1: a batch sends every message on one session, one outcome each, in order', async () => {
    const driver = v1Driver();
    peer.unregistered.add('t-3');
    const outcomes = await driver.sendBatch(
      Array.from({ length: 50 }, (_, i) => ({ deviceToken: `t-${i}`, body: 'x' })),
      ctx(),
    );
    expect(outcomes.map((o) => o.class)).toEqual(
      Array.from({ length: 50 }, (_, i) => (i === 3 ? 'recipient_failure' : 'sent')),
    );
    expect(peer.sessions).toBe(1);
    expect(peer.issued).toHaveLength(1);
  });

  it('legacy: 2,500 tokens go out in three calls of at most 1,000, one result per token', async () => {
    const driver = legacyDriver();
    for (const i of [0, 1200, 2499]) peer.unregistered.add(`t-${i}`);
    const outcomes = await driver.sendBatch(
      Array.from({ length: 2500 }, (_, i) => ({ deviceToken: `t-${i}`, title: 'T', body: 'B' })),
      ctx(),
    );
    expect(peer.requests.map((r) => (r.body.registration_ids as string[]).length).sort()).toEqual([
      1000, 1000, 500,
    ]);
    expect(peer.requests[0]!.authorization).toBe(`key=${SERVER_KEY}`);
    expect(outcomes.filter((o) => o.class === 'recipient_failure')).toHaveLength(3);
    expect(outcomes[1200]).toMatchObject({ class: 'recipient_failure', providerCode: 'NotRegistered' });
    expect(outcomes[1].class).toBe('sent');
    expect(peer.sessions).toBe(1);
  });

  it('legacy: messages with different content are separate calls', async () => {
    const driver = legacyDriver();
    const outcomes = await driver.sendBatch(
      [
        { deviceToken: 'a', body: 'one' },
        { deviceToken: 'b', body: 'two' },
        { deviceToken: 'c', body: 'one' },
      ],
      ctx(),
    );
    expect(outcomes.map((o) => o.class)).toEqual(['sent', 'sent', 'sent']);
    expect(peer.requests.map((r) => r.body.registration_ids)).toEqual([['a', 'c'], ['b']]);
  });

  it('legacy: a refused server key is permanent for every token', async () => {
    const driver = legacyDriver('wrong-key');
    const outcomes = await driver.sendBatch(
      [
        { deviceToken: 'a', body: 'x' },
        { deviceToken: 'b', body: 'x' },
      ],
      ctx(),
    );
    expect(outcomes.map((o) => o.class)).toEqual(['permanent', 'permanent']);
    expect(outcomes[0]!.reason).toBe('server key refused (HTTP 401)');
    expect(JSON.stringify(outcomes)).not.toContain('wrong-key');
  });

  it('reads the service account from service_account_file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fcm-'));
    const file = join(dir, 'key.json');
    writeFileSync(
      file,
      JSON.stringify({
        type: 'service_account',
        project_id: PROJECT,
        client_email: CLIENT_EMAIL,
        private_key: keys.privatePem,
        token_uri: peer.tokenUri,
      }),
    );
    const driver = v1Driver({ service_account: undefined, service_account_file: file });
    expect((await driver.send({ deviceToken: 'a', body: 'x' }, ctx())).class).toBe('sent');
  });
});

describe('push_driver_a config', () => {
  const account = { client_email: CLIENT_EMAIL, private_key: keys.privatePem };
  it.each([
    ['neither credential', {}, 'exactly one of'],
    ['both credentials', { server_key: 'k', service_account: account, project_id: 'p' }, 'exactly one of'],
    ['a service account without project_id', { service_account: account }, 'required with a service account'],
  ])('%s is refused', (_label, config, message) => {
    const result = PushDriverAConfigSchema.safeParse(config);
    expect(result.success).toBe(false);
    expect(JSON.stringify(result.error?.issues)).toContain(message);
  });

  it('a missing key file is a startup error naming the path', () => {
    const config = PushDriverAConfigSchema.parse({
      project_id: 'p',
      service_account_file: '/nonexistent/key.json',
    });
    expect(() => new FcmDriver({ name: 'x', logger: silentLogger(), config })).toThrow(
      '/nonexistent/key.json',
    );
  });
});
