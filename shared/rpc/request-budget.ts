/**
 * The request bytes a server holds at once (`server.max_in_flight_request_bytes`): one budget for
 * every request of both ports together. Each call takes the bytes of its request as they arrive and
 * gives them back when the call ends (its request message lives that long); a chunk that does not
 * fit refuses its call with RESOURCE_EXHAUSTED (HTTP 429), so many large requests at once cannot
 * take the process's memory, whatever each one's own limit.
 */
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
