/**
 * Raw RPC calls for the fuzzer: the request bytes go on the wire exactly as generated (a grpc-js
 * client with identity serializers; `fetch` for the Connect protocol), and each call comes back as
 * one `Answer` (the status code name and its message) whatever happened, transport failures included.
 */
import * as grpc from '@grpc/grpc-js';
import { Code } from '@connectrpc/connect';

/** How one call ended. */
export interface Answer {
  /** The status as a Connect code name (`ok`, `invalid_argument`, ...), or `transport` when no status came. */
  readonly code: string;
  /** The status message (empty for `ok`). */
  readonly message: string;
}

/** Longest any fuzz call may take before it counts as a hang. */
export const CALL_DEADLINE_MS = 15_000;

/** Connect code name of a gRPC status number (`3` gives `invalid_argument`). */
export function codeName(code: number): string {
  if (code === 0) return 'ok';
  const name = Code[code];
  return name === undefined
    ? `code_${code}`
    : name.replace(/[A-Z]/g, (c, at: number) => (at ? '_' : '') + c.toLowerCase());
}

function metadata(token: string): grpc.Metadata {
  const md = new grpc.Metadata();
  md.set('authorization', `Bearer ${token}`);
  return md;
}

const identity = (b: Buffer) => b;

/** A unary gRPC call with raw request bytes. */
export function grpcUnary(
  client: grpc.Client,
  path: string,
  body: Uint8Array,
  token: string,
): Promise<Answer> {
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      path,
      identity,
      identity,
      Buffer.from(body),
      metadata(token),
      { deadline: Date.now() + CALL_DEADLINE_MS },
      (err) =>
        resolve(err ? { code: grpcErrorCode(err), message: err.details } : { code: 'ok', message: '' }),
    );
  });
}

/** A status from the server, or `transport` when the connection failed (no server answer). */
function grpcErrorCode(err: grpc.ServiceError): string {
  // grpc-js reports a dropped or refused connection as UNAVAILABLE with no server status: the server
  // did not answer, which the fuzzer counts as a crash rather than as the service's UNAVAILABLE.
  if (err.code === grpc.status.UNAVAILABLE && /No connection|Connection dropped|ECONNRE/.test(err.details)) {
    return 'transport';
  }
  return codeName(err.code);
}

/**
 * Opens a server stream with raw request bytes, waits for its first message, its end, or `openMs`,
 * then cancels it. `cancelled` is the answer when the stream was still open: the server accepted it.
 */
export function grpcStream(
  client: grpc.Client,
  path: string,
  body: Uint8Array,
  token: string,
  openMs: number,
): Promise<Answer> {
  return new Promise((resolve) => {
    let settled = false;
    const call = client.makeServerStreamRequest(
      path,
      identity,
      identity,
      Buffer.from(body),
      metadata(token),
      {
        deadline: Date.now() + CALL_DEADLINE_MS,
      },
    );
    const cancel = () => {
      if (!settled) call.cancel();
    };
    const timer = setTimeout(cancel, openMs);
    call.on('data', cancel);
    call.on('error', () => undefined);
    call.on('status', (s: grpc.StatusObject) => {
      settled = true;
      clearTimeout(timer);
      resolve(
        s.code === grpc.status.OK
          ? { code: 'ok', message: '' }
          : {
              code: grpcErrorCode({ ...s, name: '', message: s.details } as grpc.ServiceError),
              message: s.details,
            },
      );
    });
  });
}

/** A Connect unary call (`application/proto` or `application/json`). */
export async function connectUnary(
  url: string,
  body: Uint8Array | string,
  contentType: 'application/proto' | 'application/json',
  token: string,
): Promise<Answer> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': contentType, Authorization: `Bearer ${token}` },
      body,
      signal: AbortSignal.timeout(CALL_DEADLINE_MS),
    });
  } catch (err) {
    return { code: 'transport', message: transportFailure(err) };
  }
  const bytes = Buffer.from(await res.arrayBuffer());
  if (res.status === 200) return { code: 'ok', message: '' };
  return connectError(bytes, `http_${res.status}`);
}

/**
 * A fetch failure with its cause ("fetch failed" alone says nothing): the socket error's code and
 * message, so a failure under load says whether the server reset, closed or never answered.
 */
function transportFailure(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (!cause) return String(err);
  return `${String(err)} (cause: ${String(cause.code ?? '')} ${String(cause.message ?? '')})`;
}

/** The `{code, message}` of a Connect error body; `fallback` when it has none. */
function connectError(bytes: Buffer, fallback: string): Answer {
  try {
    const parsed = JSON.parse(bytes.toString('utf8')) as { code?: unknown; message?: unknown };
    return {
      code: typeof parsed.code === 'string' ? parsed.code : fallback,
      message: typeof parsed.message === 'string' ? parsed.message : '',
    };
  } catch {
    return { code: fallback, message: bytes.toString('utf8').slice(0, 200) };
  }
}

/**
 * A Connect server stream (`application/connect+proto`): reads until the first message or the
 * end-of-stream envelope, or `openMs`, then aborts. An aborted stream answers `canceled` (Connect's spelling, as gRPC's CANCELLED is named).
 */
export async function connectStream(
  url: string,
  body: Uint8Array,
  token: string,
  openMs: number,
): Promise<Answer> {
  const envelope = Buffer.alloc(5 + body.length);
  envelope.writeUInt32BE(body.length, 1);
  envelope.set(body, 5);
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), openMs);
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/connect+proto', Authorization: `Bearer ${token}` },
      body: envelope,
      signal: AbortSignal.any([abort.signal, AbortSignal.timeout(CALL_DEADLINE_MS)]),
    });
    if (res.status !== 200) return connectError(Buffer.from(await res.arrayBuffer()), `http_${res.status}`);
    let buffered = Buffer.alloc(0);
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 5) {
        const flags = buffered[0]!;
        const length = buffered.readUInt32BE(1);
        if (buffered.length < 5 + length) break;
        const payload = buffered.subarray(5, 5 + length);
        buffered = buffered.subarray(5 + length);
        if ((flags & 0b10) !== 0) {
          const end = JSON.parse(payload.toString('utf8')) as { error?: { code: string; message?: string } };
          return end.error
            ? { code: end.error.code, message: end.error.message ?? '' }
            : { code: 'ok', message: '' };
        }
        // A message arrived: the stream was accepted; leave it.
        abort.abort();
        return { code: 'canceled', message: 'cancelled by the client' };
      }
    }
    return { code: 'transport', message: 'stream ended without an end-of-stream envelope' };
  } catch (err) {
    if (abort.signal.aborted) return { code: 'canceled', message: 'cancelled by the client' };
    return { code: 'transport', message: String(err) };
  } finally {
    clearTimeout(timer);
  }
}
