/**
 * The one backoff policy: exponential (the ceiling starts at `baseMs` and doubles per retry, capped at
 * `maxMs`), optionally with AWS's "full jitter" (a uniform delay in [0, ceiling), which spreads a
 * burst of failures instead of retrying it in lockstep), and a peer's Retry-After honoured in place of
 * the backoff (capped at `maxMs`). Every retry loop configures one with its own numbers: the delivery
 * retry policy, the worker's database retry, the alert channels, the LISTEN reconnect.
 */

/** How a use configures the backoff. */
export interface BackoffOptions {
  /** The delay before the first retry (its ceiling, with jitter), in ms. */
  baseMs: number;
  /** The largest delay, in ms; also caps a Retry-After. */
  maxMs: number;
  /** `none` (default): the ceiling itself; `full`: uniform in [0, ceiling). */
  jitter?: 'none' | 'full';
  /** Random source in [0, 1) for the jitter; tests pin it. */
  random?: () => number;
}

/** Exponential backoff with a cap, optional full jitter and Retry-After. */
export class Backoff {
  private readonly baseMs: number;
  private readonly maxMs: number;
  private readonly jitter: boolean;
  private readonly random: () => number;

  constructor(options: BackoffOptions) {
    const { baseMs, maxMs } = options;
    if (!(Number.isFinite(baseMs) && baseMs >= 0 && Number.isFinite(maxMs) && maxMs >= 0))
      throw new RangeError(
        `backoff needs finite, non-negative baseMs and maxMs (got ${baseMs} and ${maxMs})`,
      );
    this.baseMs = baseMs;
    this.maxMs = maxMs;
    this.jitter = options.jitter === 'full';
    this.random = options.random ?? Math.random;
  }

  /**
   * The delay before retry number `retry` (1 = the first retry), in ms. A usable `retryAfterMs` (a
   * finite, non-negative number a peer asked for) replaces the backoff, rounded up and capped.
   */
  delayMs(retry: number, retryAfterMs?: number): number {
    if (retryAfterMs !== undefined && Number.isFinite(retryAfterMs) && retryAfterMs >= 0) {
      return Math.min(Math.ceil(retryAfterMs), this.maxMs);
    }
    // 2^(n-1) overflows to Infinity long before it matters; min() keeps it at the cap.
    const ceiling = Math.min(this.maxMs, this.baseMs * 2 ** Math.max(0, retry - 1));
    return this.jitter ? Math.floor(this.random() * ceiling) : ceiling;
  }

  /** Waits the delay before retry number `retry`; an aborted `signal` ends the wait early. */
  sleep(retry: number, signal?: AbortSignal): Promise<void> {
    return sleepMs(this.delayMs(retry), signal);
  }
}

/** Waits `ms`; an aborted `signal` ends the wait early (resolves, never rejects). */
export function sleepMs(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
