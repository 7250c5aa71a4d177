/**
 * Signed, expiring acknowledgment links (`{public_base_url}/oncall/ack?t=<token>`), the scheme of
 * the notification service's unsubscribe links: a token is `<payload>.<mac>`, the payload base64url
 * of the JSON `[alert_id, user_id, expiry]` (expiry in Unix seconds), the mac base64url of
 * HMAC-SHA256 over `oncall-ack.v1.` + the payload text, keyed with `monitor.oncall.paging.signing_key`.
 * The mac is compared in constant time over the text as received. The token is the only credential
 * of the `/oncall/ack` route.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { type Clock, systemClock } from '../../../shared/runtime/clock';

/** The path of the acknowledgment route on the monitor's HTTP port. */
export const ACK_PATH = '/oncall/ack';
/** Longest token accepted for verification. */
export const MAX_ACK_TOKEN_LENGTH = 2048;

const MAC_CONTEXT = 'oncall-ack.v1.';
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** What a token verifies to. */
export type AckTokenCheck =
  | { ok: true; alertId: string; userId: string; expiresAt: number }
  | { ok: false; reason: 'malformed' | 'forged' | 'expired' };

/** Signs and verifies acknowledgment tokens. */
export class AckLinks {
  private readonly key: Buffer;
  private readonly base: string;
  private readonly clock: Clock;

  constructor(options: { signingKey: string; publicBaseUrl: string; clock?: Clock }) {
    if (Buffer.byteLength(options.signingKey, 'utf8') < 32)
      throw new Error('oncall.paging.signing_key must be at least 32 bytes');
    this.key = Buffer.from(options.signingKey, 'utf8');
    this.base = options.publicBaseUrl.replace(/\/+$/, '');
    this.clock = options.clock ?? systemClock;
  }

  /** A token for `userId` acknowledging `alertId`, valid until `expiresAt` (ms; kept to the second). */
  token(alertId: string, userId: string, expiresAt: number): string {
    const expiry = Math.floor(expiresAt / 1000);
    const payload = Buffer.from(JSON.stringify([alertId, userId, expiry]), 'utf8').toString('base64url');
    return `${payload}.${this.mac(payload)}`;
  }

  /** The link of a token. */
  url(alertId: string, userId: string, expiresAt: number): string {
    return `${this.base}${ACK_PATH}?t=${this.token(alertId, userId, expiresAt)}`;
  }

  /** Checks a token (never throws). */
  verify(token: unknown): AckTokenCheck {
    if (typeof token !== 'string' || token.length === 0 || token.length > MAX_ACK_TOKEN_LENGTH)
      return { ok: false, reason: 'malformed' };
    const dot = token.indexOf('.');
    if (dot <= 0 || dot !== token.lastIndexOf('.')) return { ok: false, reason: 'malformed' };
    const payload = token.slice(0, dot);
    const mac = token.slice(dot + 1);
    if (!BASE64URL.test(payload) || !BASE64URL.test(mac)) return { ok: false, reason: 'malformed' };
    const expected = Buffer.from(this.mac(payload), 'ascii');
    const given = Buffer.from(mac, 'ascii');
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      return { ok: false, reason: 'forged' };
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      return { ok: false, reason: 'malformed' };
    }
    if (!Array.isArray(parsed) || parsed.length !== 3) return { ok: false, reason: 'malformed' };
    const [alertId, userId, expiry] = parsed as unknown[];
    if (typeof alertId !== 'string' || typeof userId !== 'string' || typeof expiry !== 'number')
      return { ok: false, reason: 'malformed' };
    if (expiry * 1000 <= this.clock.now()) return { ok: false, reason: 'expired' };
    return { ok: true, alertId, userId, expiresAt: expiry * 1000 };
  }

  private mac(payload: string): string {
    return createHmac('sha256', this.key).update(MAC_CONTEXT).update(payload).digest('base64url');
  }
}
