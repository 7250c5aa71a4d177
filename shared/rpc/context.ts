import { createContextKey } from '@connectrpc/connect';

/** Which port a call arrived on: `grpc` (grpc-js) or `http` (Connect, gRPC-Web over HTTP/1.1). */
export const transportKey = createContextKey<'grpc' | 'http'>('http', { description: 'transport' });

/**
 * Who is calling: the name of its API token (`server.api_tokens`; a plain token's name is
 * `token:<16 hex of sha256(token)>`, stable when the token list is reordered, never the token
 * itself), `anonymous` when API tokens are off. Handlers scope what a caller owns by it (delivery
 * idempotency keys and records); log lines of the call carry it.
 */
export const callerKey = createContextKey<string>('anonymous', { description: 'caller' });

/**
 * The port's verdict on the call's API token, decided once on its headers before its body was read
 * (`grpc-intake.ts` on the gRPC port, `http-port.ts` on the HTTP port): the name of the token it
 * admitted. Undefined when no port admitted the call (or tokens are off); with tokens on, the auth
 * interceptor refuses such a call instead of checking the token a second time.
 */
export const admittedKey = createContextKey<string | undefined>(undefined, {
  description: 'admitted caller',
});

/**
 * Set by the metrics interceptor when a call reaches it. An HTTP-port answer without it was given by
 * the protocol layer before any handler ran (undecodable request, wrong method or content type), and
 * the HTTP port counts it itself.
 */
export const countedKey = createContextKey<boolean>(false, { description: 'counted' });

/**
 * Set by the HTTP port on stream requests: called with the response headers when the stream's
 * implementation starts, so they go on the wire at once. Connect itself holds a stream's headers
 * back until its first message, which a quiet stream (a watch) may not send for a long time.
 */
export const streamStartKey = createContextKey<((headers: Headers) => void) | undefined>(undefined, {
  description: 'stream start',
});
