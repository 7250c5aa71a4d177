import { createHash } from 'node:crypto';
import { createContextKey } from '@connectrpc/connect';

/** Which port a call arrived on: `grpc` (grpc-js) or `http` (Connect, gRPC-Web over HTTP/1.1). */
export const transportKey = createContextKey<'grpc' | 'http'>('http', { description: 'transport' });

/**
 * Who is calling: `token:<16 hex of sha256(token)>` for an API token (stable when the token list is
 * reordered; never the token itself), `anonymous` when API tokens are off. Handlers scope what a
 * caller owns by it (delivery idempotency keys and records).
 */
export const callerKey = createContextKey<string>('anonymous', { description: 'caller' });

/** The caller identity of an API token (see `callerKey`). */
export function callerIdentity(token: string): string {
  return `token:${createHash('sha256').update(token).digest('hex').slice(0, 16)}`;
}
