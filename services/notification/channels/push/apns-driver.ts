/**
 * `push_driver_b`: Apple Push Notification service over HTTP/2. `POST {base_url}/3/device/{token}`
 * with an ES256 provider token (JWT: header `kid` = key_id, claim `iss` = team_id, `iat`), reused for
 * `TOKEN_RENEW_MS` and renewed then (APNs refuses tokens older than an hour and ones renewed more
 * often than every 20 minutes). One session per backend; answers classified by apns-outcomes.ts.
 */
import { type Jose, loadJose } from '../../../../shared/auth/jose';
import type { Logger } from '../../../../shared/logging/logger';
import type { DriverSendContext, SendOutcome } from '../../delivery/driver';
import { APNS_ERROR_OUTCOMES, classifyApnsAnswer } from './apns-outcomes';
import type { PushDriverBConfig } from './config';
import { Http2Client, Http2RequestError, splitBaseUrl } from './http2-client';
import { batchContext, mapBounded, probeSession, type PushDriver } from './push-driver';
import type { BackendHealthResult } from '../backend-registry';
import { APNS_MAX_PAYLOAD_BYTES, type PushPayload } from './push-payload';
import { type Clock, systemClock } from '../../../../shared/runtime/clock';

/** A provider token is reused this long (inside APNs' 20 to 50 minute window). */
export const TOKEN_RENEW_MS = 30 * 60 * 1000;

/** Options of the driver. */
export interface ApnsDriverOptions {
  name: string;
  config: PushDriverBConfig;
  logger: Logger;
  /** Injectable clock for the token's age and expiries (tests). */
  clock?: Clock;
}

/** The APNs JSON of one notification: `aps.alert` plus the data keys at the top level. */
export function apnsBody(p: PushPayload): string {
  const alert: Record<string, string> = {};
  if (p.title) alert.title = p.title;
  if (p.body) alert.body = p.body;
  const aps: Record<string, unknown> = Object.keys(alert).length > 0 ? { alert } : { 'content-available': 1 };
  // `aps` is APNs' own key: a data key of that name must not replace it.
  return JSON.stringify({ ...p.data, aps });
}

/** The APNs push driver. */
export class ApnsDriver implements PushDriver {
  readonly channel = 'push' as const;
  readonly driver = 'push_driver_b';
  readonly name: string;
  readonly maxPayloadBytes = APNS_MAX_PAYLOAD_BYTES;
  private readonly client: Http2Client;
  private readonly prefix: string;
  private readonly now: () => number;
  private key: Promise<Awaited<ReturnType<Jose['importPKCS8']>>> | undefined;
  private token: { jwt: Promise<string>; at: number } | undefined;

  constructor(private readonly options: ApnsDriverOptions) {
    this.name = options.name;
    const { origin, prefix } = splitBaseUrl(options.config.base_url);
    this.prefix = prefix;
    this.client = new Http2Client(origin, {
      maxStreams: options.config.max_concurrent_streams,
      timeoutMs: options.config.timeout_ms,
    });
    const clock = options.clock ?? systemClock;
    this.now = () => clock.now();
  }

  get sessionsOpened(): number {
    return this.client.sessionsOpened;
  }

  payloadBytes(payload: PushPayload): number {
    return Buffer.byteLength(apnsBody(payload));
  }

  async send(payload: PushPayload, ctx: DriverSendContext): Promise<SendOutcome> {
    const body = apnsBody(payload);
    if (Buffer.byteLength(body) > this.maxPayloadBytes) return decision('payload_too_large');
    let outcome = await this.post(payload, body, ctx, false);
    // The token aged out early (clock skew, a revoked key rotated back): renew once and retry.
    if (outcome.providerCode === 'ExpiredProviderToken') outcome = await this.post(payload, body, ctx, true);
    return outcome;
  }

  async sendBatch(payloads: readonly PushPayload[], ctx: DriverSendContext): Promise<SendOutcome[]> {
    // APNs takes one notification per stream: the batch is streams on the one session, as many at
    // once as the session allows.
    const streams = this.options.config.max_concurrent_streams;
    const batch = batchContext(ctx, streams);
    try {
      return await mapBounded(payloads, streams, (p) => this.send(p, batch.ctx));
    } finally {
      batch.done();
    }
  }

  checkHealth(): Promise<BackendHealthResult> {
    return probeSession(this, this.client);
  }

  close(): Promise<void> {
    return this.client.close();
  }

  private async post(
    payload: PushPayload,
    body: string,
    ctx: DriverSendContext,
    renew: boolean,
  ): Promise<SendOutcome> {
    const { config } = this.options;
    const headers: Record<string, string> = {
      authorization: `bearer ${await this.providerToken(renew)}`,
      'apns-topic': config.topic,
      'apns-push-type': config.push_type,
      'content-type': 'application/json',
    };
    if (payload.collapseKey) headers['apns-collapse-id'] = payload.collapseKey;
    if (payload.ttlSeconds !== undefined) {
      // 0 means "deliver now or never"; otherwise an absolute expiry in epoch seconds.
      headers['apns-expiration'] =
        payload.ttlSeconds === 0 ? '0' : String(Math.floor(this.now() / 1000) + payload.ttlSeconds);
    }
    if (payload.priority) headers['apns-priority'] = payload.priority === 'high' ? '10' : '5';
    try {
      const answer = await this.client.request({
        path: `${this.prefix}/3/device/${encodeURIComponent(payload.deviceToken)}`,
        headers,
        body,
        signal: ctx.signal,
      });
      const apnsId = answer.headers['apns-id'];
      return classifyApnsAnswer(answer.status, answer.body, Array.isArray(apnsId) ? apnsId[0] : apnsId);
    } catch (err) {
      if (err instanceof Http2RequestError) return decision(err.kind);
      throw err;
    }
  }

  /** The provider token: reused until TOKEN_RENEW_MS old, or renewed now when `renew`. */
  private providerToken(renew: boolean): Promise<string> {
    const now = this.now();
    if (!renew && this.token && now - this.token.at < TOKEN_RENEW_MS) return this.token.jwt;
    const { config } = this.options;
    this.key ??= loadJose().then((jose) => jose.importPKCS8(config.private_key, 'ES256'));
    const jwt = Promise.all([loadJose(), this.key]).then(([jose, key]) =>
      new jose.SignJWT({})
        .setProtectedHeader({ alg: 'ES256', kid: config.key_id })
        .setIssuer(config.team_id)
        .setIssuedAt(Math.floor(now / 1000))
        .sign(key),
    );
    this.token = { jwt, at: now };
    // A failed signing (a bad key) is not cached: the next send tries again.
    jwt.catch(() => {
      if (this.token?.jwt === jwt) this.token = undefined;
    });
    return jwt;
  }
}

function decision(kind: keyof typeof APNS_ERROR_OUTCOMES): SendOutcome {
  const row = APNS_ERROR_OUTCOMES[kind];
  return { class: row.class, reason: row.meaning };
}
