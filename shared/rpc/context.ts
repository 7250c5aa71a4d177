import { createContextKey } from '@connectrpc/connect';

/** Which port a call arrived on: `grpc` (grpc-js) or `http` (Connect, gRPC-Web over HTTP/1.1). */
export const transportKey = createContextKey<'grpc' | 'http'>('http', { description: 'transport' });

/** The authenticated caller (an API token's index, never the token), when auth is on. */
export const callerKey = createContextKey<string>('anonymous', { description: 'caller' });

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
