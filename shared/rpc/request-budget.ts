/**
 * The request bytes a server holds at once (`server.max_in_flight_request_bytes`): one budget for
 * every request of both ports together. Each call takes the bytes of its request as they arrive and
 * gives them back when the call ends (its request message lives that long); a chunk that does not
 * fit refuses its call with RESOURCE_EXHAUSTED (HTTP 429), so many large requests at once cannot
 * take the process's memory, whatever each one's own limit.
 *
 * A compressed message is counted by what it expands to, not by its wire bytes (`inflateWithin`):
 * a 20 KB gzip message that inflates to 4 MiB holds 4 MiB. Both ports decompress through it
 * (grpc-js's own decompression and Connect's are replaced), so a call's decompression stops at the
 * smaller of its method's limit and what the budget has free.
 */
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import { Code, ConnectError } from '@connectrpc/connect';

/** The answer to a request that does not fit in the budget. */
export const SERVER_BUSY = new ConnectError(
  'the server holds too many request bytes at once; retry later',
  Code.ResourceExhausted,
);

/** The shared budget. */
export class RequestBudget {
  private used = 0;

  constructor(readonly maxBytes: number) {}

  /** Bytes currently held by calls. */
  get inFlight(): number {
    return this.used;
  }

  /** Bytes the budget can still give. */
  get free(): number {
    return Math.max(0, this.maxBytes - this.used);
  }

  /** One call's share: take its bytes as they arrive, release them all when it ends. */
  share(): RequestShare {
    return new RequestShare(this);
  }

  /** @internal */
  tryTake(bytes: number): boolean {
    if (this.used + bytes > this.maxBytes) return false;
    this.used += bytes;
    return true;
  }

  /** @internal */
  give(bytes: number): void {
    this.used -= bytes;
  }
}

/** The bytes one call holds. */
export class RequestShare {
  private held = 0;
  private released = false;

  constructor(private readonly budget: RequestBudget) {}

  /** Takes `bytes` more; false (nothing taken) when they do not fit or the share was released. */
  take(bytes: number): boolean {
    if (this.released || !this.budget.tryTake(bytes)) return false;
    this.held += bytes;
    return true;
  }

  /** Takes as many of `bytes` as the budget has free (none once released); returns how many. */
  takeUpTo(bytes: number): number {
    if (this.released) return 0;
    const n = Math.min(bytes, this.budget.free);
    if (n <= 0 || !this.budget.tryTake(n)) return 0;
    this.held += n;
    return n;
  }

  /** Gives back `bytes` of what this share holds (room taken for a message that came out smaller). */
  giveBack(bytes: number): void {
    if (this.released) return;
    const n = Math.min(bytes, this.held);
    this.held -= n;
    this.budget.give(n);
  }

  /** Gives everything back; later takes fail. Safe to call more than once. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.budget.give(this.held);
    this.held = 0;
  }
}

/** The message of a request refused for its size. */
export function tooLarge(bytes: number, limit: number): ConnectError {
  return new ConnectError(
    `request message of ${bytes} bytes is larger than this method's limit of ${limit} bytes`,
    Code.ResourceExhausted,
  );
}

/** The encodings `inflateWithin` decompresses (gRPC's gzip and deflate, Connect's gzip and br). */
export const INFLATABLE_ENCODINGS: ReadonlySet<string> = new Set(['gzip', 'deflate', 'br']);

type Inflate = (bytes: Uint8Array, options: zlib.ZlibOptions | zlib.BrotliOptions) => Promise<Buffer>;
const inflaters: Record<string, Inflate> = {
  gzip: promisify(zlib.gunzip),
  deflate: promisify(zlib.inflate),
  br: promisify(zlib.brotliDecompress),
};

/** The message of a compressed request that does not decompress (corrupt or truncated). */
const UNDECOMPRESSABLE = new ConnectError(
  'the compressed request message does not decompress',
  Code.InvalidArgument,
);

/**
 * Decompresses one request message of a call (`encoding`: one of INFLATABLE_ENCODINGS) within the
 * call's share of the budget: the share takes room for it first (its method's `limit`, or what the
 * budget has free when that is less), the decompression stops at that room, and what the message
 * did not use is given back; the message's own size stays held until the call ends.
 *
 * Beyond the method's limit: RESOURCE_EXHAUSTED naming the limit; beyond what the budget had free:
 * SERVER_BUSY (RESOURCE_EXHAUSTED, retry later); a corrupt message: INVALID_ARGUMENT. Always a
 * ConnectError.
 */
export async function inflateWithin(
  share: RequestShare,
  limit: number,
  encoding: string,
  bytes: Uint8Array,
): Promise<Uint8Array<ArrayBuffer>> {
  const inflate = inflaters[encoding];
  if (!inflate) throw new ConnectError(`unsupported compression "${encoding}"`, Code.Unimplemented);
  if (bytes.byteLength === 0) return new Uint8Array(new ArrayBuffer(0));
  const room = share.takeUpTo(limit);
  if (room === 0) throw SERVER_BUSY;
  try {
    const out = await inflate(bytes, { maxOutputLength: room });
    share.giveBack(room - out.byteLength);
    // zlib's output is a Buffer of its own (never a SharedArrayBuffer), as Connect expects.
    return out as Uint8Array<ArrayBuffer>;
  } catch (err) {
    share.giveBack(room);
    if ((err as { code?: unknown }).code !== 'ERR_BUFFER_TOO_LARGE') throw UNDECOMPRESSABLE;
    throw room < limit ? SERVER_BUSY : tooLargeInflated(limit);
  }
}

/** The message of a compressed request that expands past its method's limit. */
function tooLargeInflated(limit: number): ConnectError {
  return new ConnectError(
    `request message decompresses to more than this method's limit of ${limit} bytes`,
    Code.ResourceExhausted,
  );
}
