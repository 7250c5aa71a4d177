/**
 * `push_driver_a`: Firebase Cloud Messaging over HTTP/2. With a service account, HTTP v1
 * (`POST {base_url}/v1/projects/{project_id}/messages:send`, one message per stream) with an OAuth2
 * access token got by the JWT-bearer grant (RS256 assertion signed with the account's key) and cached
 * until shortly before it expires. With `server_key`, the legacy protocol (`POST {base_url}/fcm/send`,
 * up to 1,000 `registration_ids` per call). Answers classified by fcm-outcomes.ts.
 */
import { type Jose, loadJose } from '../../../../shared/auth/jose';
import type { Logger } from '../../../../shared/logging/logger';
import type { DriverSendContext, SendOutcome } from '../../delivery/driver';
import { type PushDriverAConfig, resolveServiceAccount, type ServiceAccount } from './config';
import {
  classifyFcmLegacyResult,
  classifyFcmLegacyStatus,
  classifyFcmV1Answer,
  FCM_ERROR_OUTCOMES,
} from './fcm-outcomes';
import { type Http2Answer, Http2Client, Http2RequestError, splitBaseUrl } from './http2-client';
import { batchContext, mapBounded, probeSession, type PushDriver } from './push-driver';
import type { BackendHealthResult } from '../backend-registry';
import { contentKey, FCM_MAX_PAYLOAD_BYTES, type PushPayload } from './push-payload';
import { cutText } from '../../../../shared/text/cut';
import { type Clock, systemClock } from '../../../../shared/runtime/clock';

/** The OAuth scope of FCM sends. */
export const FCM_SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';
/** Registration tokens per legacy call (the provider's limit). */
export const LEGACY_MAX_TOKENS = 1000;
/** An access token is renewed this long before it expires. */
const TOKEN_MARGIN_MS = 5 * 60 * 1000;
/** Largest token endpoint answer read. */
const MAX_TOKEN_ANSWER = 64 * 1024;

/** Options of the driver. */
export interface FcmDriverOptions {
  name: string;
  config: PushDriverAConfig;
  logger: Logger;
  /** Injectable clock for the access token's age (tests). */
  clock?: Clock;
}

/** The HTTP v1 `message` of one notification. */
export function fcmV1Message(p: PushPayload): Record<string, unknown> {
  const message: Record<string, unknown> = { token: p.deviceToken };
  if (p.title || p.body) message.notification = { title: p.title, body: p.body };
  if (p.data) message.data = p.data;
  const android: Record<string, unknown> = {};
  if (p.collapseKey) android.collapse_key = p.collapseKey;
  if (p.ttlSeconds !== undefined) android.ttl = `${p.ttlSeconds}s`;
  if (p.priority) android.priority = p.priority === 'high' ? 'HIGH' : 'NORMAL';
  if (Object.keys(android).length > 0) message.android = android;
  return message;
}

/** The legacy body for `tokens` sharing the content of `p`. */
export function fcmLegacyBody(p: PushPayload, tokens: readonly string[]): Record<string, unknown> {
  const body: Record<string, unknown> = { registration_ids: tokens };
  if (p.title || p.body) body.notification = { title: p.title, body: p.body };
  if (p.data) body.data = p.data;
  if (p.collapseKey) body.collapse_key = p.collapseKey;
  if (p.ttlSeconds !== undefined) body.time_to_live = p.ttlSeconds;
  if (p.priority) body.priority = p.priority;
  return body;
}

/** Why no access token could be had. */
class TokenError extends Error {
  constructor(readonly kind: 'token_endpoint' | 'token_refused') {
    super(kind);
  }
}

/** The FCM push driver. */
export class FcmDriver implements PushDriver {
  readonly channel = 'push' as const;
  readonly driver = 'push_driver_a';
  readonly name: string;
  readonly maxPayloadBytes = FCM_MAX_PAYLOAD_BYTES;
  private readonly client: Http2Client;
  private readonly prefix: string;
  private readonly account: ServiceAccount | undefined;
  private readonly now: () => number;
  private access: { token: Promise<string>; expiresAt: number } | undefined;
  private key: Promise<Awaited<ReturnType<Jose['importPKCS8']>>> | undefined;

  constructor(private readonly options: FcmDriverOptions) {
    this.name = options.name;
    const { origin, prefix } = splitBaseUrl(options.config.base_url);
    this.prefix = prefix;
    this.client = new Http2Client(origin, {
      maxStreams: options.config.max_concurrent_streams,
      timeoutMs: options.config.timeout_ms,
    });
    this.account = resolveServiceAccount(options.config);
    const clock = options.clock ?? systemClock;
    this.now = () => clock.now();
  }

  /** True when the backend speaks the legacy protocol (server_key). */
  get legacy(): boolean {
    return this.account === undefined;
  }

  get sessionsOpened(): number {
    return this.client.sessionsOpened;
  }

  payloadBytes(payload: PushPayload): number {
    return Buffer.byteLength(JSON.stringify({ message: fcmV1Message(payload) }));
  }

  async send(payload: PushPayload, ctx: DriverSendContext): Promise<SendOutcome> {
    return (await this.sendBatch([payload], ctx))[0]!;
  }

  async sendBatch(payloads: readonly PushPayload[], given: DriverSendContext): Promise<SendOutcome[]> {
    const batch = batchContext(given, this.options.config.max_concurrent_streams);
    try {
      return await this.sendAll(payloads, batch.ctx);
    } finally {
      batch.done();
    }
  }

  private async sendAll(payloads: readonly PushPayload[], ctx: DriverSendContext): Promise<SendOutcome[]> {
    const out = new Array<SendOutcome>(payloads.length);
    const todo: number[] = [];
    payloads.forEach((p, i) => {
      if (this.payloadBytes(p) > this.maxPayloadBytes) out[i] = decision('payload_too_large');
      else todo.push(i);
    });
    if (this.legacy) {
      await this.sendLegacy(payloads, todo, out, ctx);
    } else {
      const limit = this.options.config.max_concurrent_streams;
      await mapBounded(todo, limit, async (i) => {
        out[i] = await this.sendV1(payloads[i]!, ctx);
      });
    }
    return out;
  }

  checkHealth(): Promise<BackendHealthResult> {
    return probeSession(this, this.client);
  }

  close(): Promise<void> {
    return this.client.close();
  }

  private async sendV1(payload: PushPayload, ctx: DriverSendContext, retried = false): Promise<SendOutcome> {
    let token: string;
    try {
      token = await this.accessToken();
    } catch (err) {
      return decision(err instanceof TokenError ? err.kind : 'token_endpoint');
    }
    const outcome = await this.post(
      `${this.prefix}/v1/projects/${encodeURIComponent(this.options.config.project_id!)}/messages:send`,
      `Bearer ${token}`,
      JSON.stringify({ message: fcmV1Message(payload) }),
      ctx,
      (status, body, headers) => classifyFcmV1Answer(status, body, [token], headers),
    );
    // A cached token refused (revoked, rotated key): drop it and try once with a new one.
    if (outcome.providerCode === 'UNAUTHENTICATED' && !retried) {
      this.access = undefined;
      return this.sendV1(payload, ctx, true);
    }
    return outcome;
  }

  private async sendLegacy(
    payloads: readonly PushPayload[],
    todo: number[],
    out: SendOutcome[],
    ctx: DriverSendContext,
  ): Promise<void> {
    // Messages with the same content go out together, up to LEGACY_MAX_TOKENS tokens per call.
    const groups = new Map<string, number[]>();
    for (const i of todo) {
      const key = contentKey(payloads[i]!);
      const group = groups.get(key);
      if (group) group.push(i);
      else groups.set(key, [i]);
    }
    const calls: number[][] = [];
    for (const group of groups.values()) {
      for (let at = 0; at < group.length; at += LEGACY_MAX_TOKENS) {
        calls.push(group.slice(at, at + LEGACY_MAX_TOKENS));
      }
    }
    const serverKey = this.options.config.server_key!;
    await mapBounded(calls, this.options.config.max_concurrent_streams, async (call) => {
      const first = payloads[call[0]!]!;
      const tokens = call.map((i) => payloads[i]!.deviceToken);
      let results: { message_id?: unknown; error?: unknown }[] | undefined;
      const whole = await this.post(
        `${this.prefix}/fcm/send`,
        `key=${serverKey}`,
        JSON.stringify(fcmLegacyBody(first, tokens)),
        ctx,
        (status, body) => {
          if (status !== 200) return classifyFcmLegacyStatus(status);
          try {
            const parsed = JSON.parse(body) as { results?: unknown };
            if (Array.isArray(parsed.results)) results = parsed.results as typeof results;
          } catch {
            results = undefined;
          }
          return { class: 'sent' };
        },
      );
      call.forEach((i, k) => {
        if (whole.class !== 'sent') out[i] = whole;
        else if (results && results[k] && typeof results[k] === 'object')
          out[i] = classifyFcmLegacyResult(results[k]);
        else out[i] = { class: 'retryable', reason: 'provider answer without a result for this token' };
      });
    });
  }

  private async post(
    path: string,
    authorization: string,
    body: string,
    ctx: DriverSendContext,
    classify: (status: number, body: string, headers: Http2Answer['headers']) => SendOutcome,
  ): Promise<SendOutcome> {
    try {
      const answer = await this.client.request({
        path,
        headers: { authorization, 'content-type': 'application/json' },
        body,
        signal: ctx.signal,
      });
      return classify(answer.status, answer.body, answer.headers);
    } catch (err) {
      if (err instanceof Http2RequestError) return decision(err.kind);
      throw err;
    }
  }

  /** The cached access token, or a new one from the token endpoint (one request at a time). */
  private accessToken(): Promise<string> {
    const now = this.now();
    if (this.access && now < this.access.expiresAt - TOKEN_MARGIN_MS) return this.access.token;
    const entry = { token: this.fetchAccessToken(now), expiresAt: Number.POSITIVE_INFINITY };
    this.access = entry;
    entry.token.then(
      () => undefined,
      () => {
        // A failure is not cached: the next send asks again.
        if (this.access === entry) this.access = undefined;
      },
    );
    return entry.token;
  }

  private async fetchAccessToken(now: number): Promise<string> {
    const account = this.account!;
    const jose = await loadJose();
    this.key ??= jose.importPKCS8(account.private_key, 'RS256');
    let assertion: string;
    try {
      assertion = await new jose.SignJWT({ scope: FCM_SCOPE })
        .setProtectedHeader({ alg: 'RS256', typ: 'JWT' })
        .setIssuer(account.client_email)
        .setAudience(account.token_uri)
        .setIssuedAt(Math.floor(now / 1000))
        .setExpirationTime(Math.floor(now / 1000) + 3600)
        .sign(await this.key);
    } catch {
      throw new TokenError('token_refused');
    }
    let res: Response;
    try {
      res = await fetch(account.token_uri, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
          assertion,
        }).toString(),
        signal: AbortSignal.timeout(this.options.config.timeout_ms),
      });
    } catch {
      throw new TokenError('token_endpoint');
    }
    const text = cutText(await res.text().catch(() => ''), MAX_TOKEN_ANSWER);
    if (res.status >= 500 || res.status === 429) throw new TokenError('token_endpoint');
    if (res.status !== 200) throw new TokenError('token_refused');
    let parsed: { access_token?: unknown; expires_in?: unknown };
    try {
      parsed = JSON.parse(text) as typeof parsed;
    } catch {
      throw new TokenError('token_endpoint');
    }
    if (typeof parsed.access_token !== 'string' || parsed.access_token === '') {
      throw new TokenError('token_endpoint');
    }
    const seconds = typeof parsed.expires_in === 'number' ? parsed.expires_in : 3600;
    if (this.access) this.access.expiresAt = now + seconds * 1000;
    return parsed.access_token;
  }
}

function decision(kind: keyof typeof FCM_ERROR_OUTCOMES): SendOutcome {
  const row = FCM_ERROR_OUTCOMES[kind];
  return { class: row.class, reason: row.meaning };
}
