/**
 * The lifecycle of one server-sent-events response, the one home for what every authenticated SSE
 * route does around its frames (the admin inbox stream, the console's activity stream): it ends when
 * the client goes, when the server starts shutting down, and when the caller's token expires (saying
 * so first, so the page reconnects with a fresh token); heartbeat comments keep proxies from closing a
 * quiet stream; a write waits for the socket to drain (or for the end), and a client that stopped
 * reading is dropped rather than left holding its buffers.
 *
 * Use: check what may be refused with a plain status first (a cursor, a watcher cap), then `start()`,
 * `write()` the frames while `signal` is not aborted, and `finish()` in a `finally`.
 */
import type { ServerResponse } from 'node:http';
import { SSE_HEADERS, sseComment, sseFrame, sseRetry } from './sse';

/** Default interval of heartbeat comments. */
export const DEFAULT_SSE_HEARTBEAT_MS = 15_000;

// setTimeout's longest delay (about 24.8 days); a longer-lived token re-arms the timer.
const MAX_TIMER_MS = 2 ** 31 - 1;
// Pre-allocated: abort() without a reason allocates a DOMException per call.
const CLIENT_GONE = new Error('SSE client disconnected');
const SHUTTING_DOWN = new Error('server shutting down');
const TOKEN_EXPIRED = new Error('SSE token expired');

/** How one stream behaves. */
export interface SseResponseOptions {
  /** Extra response headers (the route's security headers). */
  headers?: Readonly<Record<string, string>>;
  /** Interval of heartbeat comments (default 15 s). */
  heartbeatMs?: number;
  /** When the caller's token expires: the stream sends `expired` then ends. */
  expiresAt?: Date;
  /** Aborted when the server starts shutting down: the stream ends and the browser reconnects. */
  shutdownSignal?: AbortSignal;
}

/** The last frame of a stream whose token expired: reconnect with a fresh token. */
export function sseExpiredFrame(): string {
  return sseFrame({
    event: 'expired',
    data: { type: 'expired', message: 'the token has expired; reconnect with a fresh token' },
  });
}

/** One SSE response: see the module comment. */
export class SseResponse {
  private readonly controller = new AbortController();
  /** Aborted when the stream must end (client gone, shutdown, token expired, finish). */
  readonly signal: AbortSignal = this.controller.signal;
  private heartbeat: NodeJS.Timeout | undefined;
  private expiry: NodeJS.Timeout | undefined;
  private readonly onClose = (): void => this.controller.abort(CLIENT_GONE);
  private readonly onShutdown = (): void => this.controller.abort(SHUTTING_DOWN);

  constructor(
    private readonly res: ServerResponse,
    private readonly options: SseResponseOptions = {},
  ) {}

  /** True when the server is already shutting down (answer a plain 503 instead of starting). */
  get shuttingDown(): boolean {
    return this.options.shutdownSignal?.aborted ?? false;
  }

  /** Writes the headers and the `retry:` advice, and arms the heartbeat, the expiry and the listeners. */
  start(): void {
    const { res, options } = this;
    res.on('close', this.onClose);
    options.shutdownSignal?.addEventListener('abort', this.onShutdown, { once: true });
    res.writeHead(200, { ...options.headers, ...SSE_HEADERS });
    res.write(sseRetry());
    this.heartbeat = setInterval(
      () => res.write(sseComment('heartbeat')),
      options.heartbeatMs ?? DEFAULT_SSE_HEARTBEAT_MS,
    );
    if (options.expiresAt) this.armExpiry(options.expiresAt);
  }

  private armExpiry(expiresAt: Date): void {
    const left = expiresAt.getTime() - Date.now();
    if (left > MAX_TIMER_MS) {
      this.expiry = setTimeout(() => this.armExpiry(expiresAt), MAX_TIMER_MS);
      return;
    }
    this.expiry = setTimeout(
      () => {
        if (!this.res.writableEnded) this.res.write(sseExpiredFrame());
        this.controller.abort(TOKEN_EXPIRED);
      },
      Math.max(0, left),
    );
  }

  /** Writes text (frames, comments); waits while the socket is full, until it drains or the stream ends. */
  async write(text: string): Promise<void> {
    if (this.res.write(text)) return;
    await new Promise<void>((resolve) => {
      const { res, signal } = this;
      const done = (): void => {
        res.off('drain', done);
        res.off('close', done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
      // Expiry or shutdown must not wait for a client that stopped reading.
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /** Ends the stream: timers and listeners gone, the response ended (or dropped if its reader stalled). */
  finish(): void {
    clearInterval(this.heartbeat);
    clearTimeout(this.expiry);
    this.res.off('close', this.onClose);
    this.options.shutdownSignal?.removeEventListener('abort', this.onShutdown);
    if (!this.signal.aborted) this.controller.abort(CLIENT_GONE);
    // A client that stopped reading would hold the socket until its buffers drain: drop it.
    if (this.res.writableNeedDrain) this.res.destroy();
    else if (!this.res.writableEnded) this.res.end();
  }
}
