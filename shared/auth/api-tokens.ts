/**
 * API tokens (`server.api_tokens`): who an RPC caller is and what it may call. The one home for
 * turning an `Authorization` header into a caller, used by both ports of the RPC server (before any
 * request body is read) and by the HTTP routes that take the RPC tokens.
 *
 * A token is either a plain string (a caller with every scope, named after the token's digest, as
 * before scopes existed) or `{ name, token, scopes }`. The name is the caller's identity: it goes
 * into log lines and scopes what a caller owns (delivery records), so two tokens with the same name
 * (a rotation) are the same caller. The token itself is never logged or kept anywhere else.
 */
import { createHash } from 'node:crypto';
import { createTokenMatcher, parseBearer } from './bearer';

/** Every scope: what a plain-string token (or `scopes: ['*']`) has. */
export const ALL_SCOPES = '*';

/** One configured token. */
export interface ApiTokenEntry {
  name: string;
  token: string;
  /** Scope names, or `['*']` for every scope. */
  scopes: readonly string[];
}

/** A configured token as the config holds it: a plain string, or a named token with scopes. */
export type ApiTokenConfig = string | ApiTokenEntry;

/** An authenticated caller. */
export interface ApiCaller {
  /** The token's name: a plain token's is `token:<16 hex of its SHA-256>`. Never the token. */
  readonly name: string;
  /** True when the caller may call methods of `scope`. */
  allows(scope: string): boolean;
}

/** The caller name of a plain (unnamed) token: stable across reorderings, never the token itself. */
export function plainTokenName(token: string): string {
  return `token:${createHash('sha256').update(token).digest('hex').slice(0, 16)}`;
}

/** Why a request was not authenticated. */
export type AuthFailure = 'missing' | 'invalid';

/** The configured tokens of a service. */
export class ApiTokens {
  private readonly match: (given: string) => number;
  private readonly callers: readonly ApiCaller[];

  constructor(configured: readonly ApiTokenConfig[]) {
    const entries = configured.map((c): ApiTokenEntry =>
      typeof c === 'string' ? { name: plainTokenName(c), token: c, scopes: [ALL_SCOPES] } : c,
    );
    this.match = createTokenMatcher(entries.map((e) => e.token));
    this.callers = entries.map(({ name, scopes }) => {
      const all = scopes.includes(ALL_SCOPES);
      const set = new Set(scopes);
      return { name, allows: (scope: string) => all || set.has(scope) };
    });
  }

  /** False when no token is configured: the service is open (the server warns at start). */
  get enabled(): boolean {
    return this.callers.length > 0;
  }

  /** The caller an `Authorization` header presents, or why there is none. */
  authenticate(authorization: string | null | undefined): ApiCaller | AuthFailure {
    const token = parseBearer(authorization);
    if (token === undefined) return 'missing';
    const index = this.match(token);
    return index < 0 ? 'invalid' : this.callers[index]!;
  }
}

/** The tokens of `configured` that hold `scope` (for routes that take RPC tokens with a scope). */
export function tokensWithScope(configured: readonly ApiTokenConfig[], scope: string): string[] {
  return configured
    .filter((c) => typeof c === 'string' || c.scopes.includes(ALL_SCOPES) || c.scopes.includes(scope))
    .map((c) => (typeof c === 'string' ? c : c.token));
}
