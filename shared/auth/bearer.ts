/**
 * Bearer tokens (RFC 6750), the one home for reading `Authorization: Bearer <token>` and for
 * comparing a presented token with configured ones. Used by the RPC auth interceptor, the
 * `/health` and `/metrics` guards and the admin gateway's JWT check.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The token of an `Authorization: Bearer <token>` header; undefined when absent or malformed. */
export function parseBearer(authorization: string | null | undefined): string | undefined {
  if (!authorization) return undefined;
  return BEARER.exec(authorization)?.[1];
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/**
 * A matcher for a fixed set of secret tokens: returns the index of the token `given` equals, or -1.
 * Tokens are compared as SHA-256 digests with `timingSafeEqual`, against every configured token, so
 * neither a token's content nor its length nor its position leaks through timing.
 */
export function createTokenMatcher(tokens: readonly string[]): (given: string) => number {
  const expected = tokens.map(digest);
  return (given) => {
    const presented = digest(given);
    let index = -1;
    for (let i = 0; i < expected.length; i++) {
      if (timingSafeEqual(presented, expected[i]!)) index = i;
    }
    return index;
  };
}
