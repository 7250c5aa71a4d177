/**
 * One-click unsubscribe (RFC 8058): the signed link every email of a non-required category carries.
 *
 * A token is `<payload>.<mac>`: the payload is base64url of the JSON `[user_id, category, expiry]`
 * (expiry in Unix seconds), the mac base64url of HMAC-SHA256 over `unsubscribe.v1.` + the payload
 * text, keyed with `notify.unsubscribe.signing_key` (a random key per process when empty). The mac
 * is compared in constant time over the text as received, so no character of a token can change
 * without the token failing. The token is the only authentication of the unsubscribe routes
 * (unsubscribe-http.ts).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Logger } from '../../../../shared/logging/logger';
import { type Clock, systemClock } from '../../../../shared/runtime/clock';
import type { CategoryConfig, NotifyConfig } from '../../notify/config';

/** The path of the unsubscribe routes on the HTTP port. */
export const UNSUBSCRIBE_PATH = '/unsubscribe';
/** The value RFC 8058 puts in `List-Unsubscribe-Post` and in the POST body. */
export const ONE_CLICK = 'List-Unsubscribe=One-Click';
/** Longest token accepted for verification (a real one is a few hundred characters). */
export const MAX_TOKEN_LENGTH = 2048;

const MAC_CONTEXT = 'unsubscribe.v1.';
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const DAY_MS = 86_400_000;

/** Who a valid token unsubscribes, from what. */
export interface UnsubscribeTarget {
  userId: string;
  category: string;
}

/** The headers an email gets: both RFC 8058 headers, or none. */
export type UnsubscribeHeaders = (userId: string, category: string) => Record<string, string>;

/** What UnsubscribeLinks needs. */
export interface UnsubscribeLinksOptions {
  /** `notify.unsubscribe`. */
  config: NotifyConfig['unsubscribe'];
  /** `notify.categories`: no link for a required category or one without email. */
  categories: readonly CategoryConfig[];
  logger: Logger;
  clock?: Clock;
}

/** Signs and verifies unsubscribe tokens and builds the email headers that carry them. */
export class UnsubscribeLinks {
  private readonly key: Buffer;
  private readonly ttlMs: number;
  private readonly base: string;
  private readonly linked: ReadonlySet<string>;
  private readonly clock: Clock;

  constructor(options: UnsubscribeLinksOptions) {
    const { config } = options;
    if (config.signing_key === '') {
      this.key = randomBytes(32);
      // Only worth saying when links go out (without public_base_url no email carries one).
      if (config.public_base_url !== '')
        options.logger.warn(
          'notify.unsubscribe.signing_key is empty: unsubscribe links are signed with a random key and stop working when the process restarts (and on other replicas); set it in production',
        );
    } else {
      this.key = Buffer.from(config.signing_key, 'utf8');
    }
    this.ttlMs = config.token_ttl_days * DAY_MS;
    this.base = config.public_base_url.replace(/\/+$/, '');
    this.linked = new Set(
      options.categories.filter((c) => !c.required && c.channels.includes('email')).map((c) => c.name),
    );
    this.clock = options.clock ?? systemClock;
  }

  /**
   * `List-Unsubscribe: <https://.../unsubscribe?token=...>` and `List-Unsubscribe-Post:
   * List-Unsubscribe=One-Click` for an email of `category` to `userId`; none for a required category,
   * a category without email, an unknown one, or without `public_base_url`. An arrow property, so it
   * can be handed on detached.
   */
  readonly unsubscribeHeaders: UnsubscribeHeaders = (userId, category): Record<string, string> => {
    if (this.base === '' || !this.linked.has(category)) return {};
    const url = `${this.base}${UNSUBSCRIBE_PATH}?token=${this.token(userId, category)}`;
    return { 'List-Unsubscribe': `<${url}>`, 'List-Unsubscribe-Post': ONE_CLICK };
  };

  /** A token for `userId` and `category`, valid for `token_ttl_days` from now. */
  token(userId: string, category: string): string {
    const expiry = Math.floor((this.clock.now() + this.ttlMs) / 1000);
    const payload = Buffer.from(JSON.stringify([userId, category, expiry]), 'utf8').toString('base64url');
    return `${payload}.${this.mac(payload)}`;
  }

  /** The target of a valid, unexpired token; undefined for anything else (never throws). */
  verify(token: string): UnsubscribeTarget | undefined {
    if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN_LENGTH) return undefined;
    const dot = token.indexOf('.');
    if (dot <= 0 || dot !== token.lastIndexOf('.')) return undefined;
    const payload = token.slice(0, dot);
    const mac = token.slice(dot + 1);
    if (!BASE64URL.test(payload) || !BASE64URL.test(mac)) return undefined;
    const expected = Buffer.from(this.mac(payload), 'ascii');
    const given = Buffer.from(mac, 'ascii');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      return undefined;
    }
    if (!Array.isArray(parsed) || parsed.length !== 3) return undefined;
    const [userId, category, expiry] = parsed as unknown[];
    if (typeof userId !== 'string' || typeof category !== 'string' || typeof expiry !== 'number') {
      return undefined;
    }
    if (expiry * 1000 <= this.clock.now()) return undefined;
    return { userId, category };
  }

  private mac(payload: string): string {
    return createHmac('sha256', this.key).update(MAC_CONTEXT).update(payload).digest('base64url');
  }
}
