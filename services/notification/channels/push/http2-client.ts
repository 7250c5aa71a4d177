/**
 * `Http2Client`: the one HTTP/2 session a push backend keeps to its provider. Many requests share it
 * as concurrent streams, at most `maxStreams` at once (the rest wait their turn, in order); a session
 * that closes, fails or receives GOAWAY is dropped and the next request opens a new one; so is one
 * that leaves a request unanswered past its timeout and then does not answer a PING within the
 * timeout either (a provider or route that went silent keeps the TCP connection open). `http://`
 * means HTTP/2 without TLS (prior knowledge, for local servers), `https://` means TLS.
 */
import * as http2 from 'node:http2';

/** A finished exchange. */
export interface Http2Answer {
  status: number;
  /** Header names lower-case. */
  headers: http2.IncomingHttpHeaders;
  /** The body as text, cut at `MAX_ANSWER_BYTES`. */
  body: string;
}

/** One request. */
export interface Http2Request {
  method?: string;
  path: string;
  headers?: http2.OutgoingHttpHeaders;
  body?: string;
  signal?: AbortSignal;
}

/** Why a request got no answer. */
export class Http2RequestError extends Error {
  constructor(
    readonly kind: 'timeout' | 'connection' | 'aborted',
    message: string,
  ) {
    super(message);
  }
}

/** Largest answer body kept: provider answers are small; a runaway one must not fill memory. */
export const MAX_ANSWER_BYTES = 64 * 1024;

/** Options of the client. */
export interface Http2ClientOptions {
  /** Streams open at once on the session. */
  maxStreams: number;
  /** A request (waiting for a stream included) is given up after this long. */
  timeoutMs: number;
}

/** One backend's HTTP/2 session and its stream limit. */
export class Http2Client {
  private session: http2.ClientHttp2Session | undefined;
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  private closed = false;
  /** Sessions with a liveness PING in flight (one at a time per session). */
  private readonly pinging = new WeakSet<http2.ClientHttp2Session>();
  /** Sessions opened so far (tests and the health check read it). */
  sessionsOpened = 0;

  constructor(
    readonly origin: string,
    private readonly options: Http2ClientOptions,
  ) {}

  /** Sends one request and reads the answer; rejects with Http2RequestError when none came. */
  async request(req: Http2Request): Promise<Http2Answer> {
    if (this.closed) throw new Http2RequestError('connection', 'client closed');
    // One timer and one listener per request: AbortSignal.timeout/any per request cost more than
    // the request itself at thousands of streams per second.
    const gate = new RequestGate(this.options.timeoutMs, req.signal);
    try {
      await this.acquire(gate);
      return await this.exchange(req, gate);
    } finally {
      gate.dispose();
      if (gate.holdsSlot) this.releaseSlot();
    }
  }

  /** Opens the session if none is open and waits until it is connected (the health probe). */
  async connect(timeoutMs = this.options.timeoutMs): Promise<void> {
    const session = this.currentSession();
    if (session.connecting === false) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => done(new Error('connect timeout')), timeoutMs);
      const done = (err?: Error) => {
        clearTimeout(timer);
        session.off('connect', ok);
        session.off('close', closedEarly);
        if (err) reject(err);
        else resolve();
      };
      const ok = () => done();
      const closedEarly = () => done(new Error('connection failed'));
      session.once('connect', ok);
      session.once('close', closedEarly);
    });
  }

  /** True while a session is open and usable. */
  get connected(): boolean {
    return this.session !== undefined && !this.session.connecting && !this.session.destroyed;
  }

  /** Closes the session; requests in flight finish or fail, new ones are refused. */
  async close(): Promise<void> {
    this.closed = true;
    const session = this.session;
    this.session = undefined;
    for (const wake of this.waiting.splice(0)) wake();
    if (!session || session.destroyed) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        session.destroy();
        resolve();
      }, this.options.timeoutMs);
      session.close(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private async acquire(gate: RequestGate): Promise<void> {
    if (this.active < this.options.maxStreams && this.waiting.length === 0) {
      this.active++;
      gate.holdsSlot = true;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const wake = () => {
        gate.onEnd = undefined;
        if (this.closed) reject(new Http2RequestError('connection', 'client closed'));
        else resolve();
      };
      gate.onEnd = (err) => {
        const i = this.waiting.indexOf(wake);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(err);
      };
      if (gate.error) return gate.onEnd(gate.error);
      this.waiting.push(wake);
    });
    this.active++;
    gate.holdsSlot = true;
  }

  private releaseSlot(): void {
    this.active--;
    // The slot passes to the next waiter, in arrival order.
    const next = this.waiting.shift();
    if (next) next();
  }

  private currentSession(): http2.ClientHttp2Session {
    if (this.session && !this.session.closed && !this.session.destroyed) return this.session;
    const session = http2.connect(this.origin);
    this.sessionsOpened++;
    const drop = () => {
      if (this.session === session) this.session = undefined;
    };
    // A failed or closed session is dropped; the next request reconnects. Its streams see the error.
    session.on('error', drop);
    session.on('close', drop);
    // GOAWAY: streams already open finish; new requests go to a new session.
    session.on('goaway', drop);
    this.session = session;
    return session;
  }

  /**
   * After a request timed out on `session`: a PING must come back within the timeout, else the
   * session is destroyed (and dropped by its close listener) so the next request connects anew. A
   * session that is only slow answers the PING and is kept. Without this, a peer that stopped
   * answering on an open connection would take every later request with it, forever.
   */
  private checkAlive(session: http2.ClientHttp2Session): void {
    if (session.destroyed || this.pinging.has(session)) return;
    this.pinging.add(session);
    const timer = setTimeout(() => session.destroy(), this.options.timeoutMs);
    timer.unref();
    const done = (err: Error | null) => {
      clearTimeout(timer);
      this.pinging.delete(session);
      if (err) session.destroy();
    };
    try {
      if (!session.ping(done)) done(new Error('ping not sent'));
    } catch (err) {
      done(err as Error);
    }
  }

  private exchange(req: Http2Request, gate: RequestGate): Promise<Http2Answer> {
    return new Promise<Http2Answer>((resolve, reject) => {
      if (gate.error) return reject(gate.error);
      let stream: http2.ClientHttp2Stream;
      let session: http2.ClientHttp2Session;
      try {
        session = this.currentSession();
        stream = session.request({
          ':method': req.method ?? 'POST',
          ':path': req.path,
          ...req.headers,
        });
      } catch {
        // The session went away between the check and the request.
        this.session = undefined;
        return reject(new Http2RequestError('connection', 'connection failed'));
      }
      gate.onEnd = (err) => {
        stream.close(http2.constants.NGHTTP2_CANCEL);
        if (err.kind === 'timeout') this.checkAlive(session);
        reject(err);
      };
      let status = 0;
      let headers: http2.IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('response', (h) => {
        headers = h;
        status = Number(h[':status']);
      });
      stream.on('data', (chunk: Buffer) => {
        if (size >= MAX_ANSWER_BYTES) return;
        chunks.push(chunk.subarray(0, MAX_ANSWER_BYTES - size));
        size += chunk.length;
      });
      // Every stream emits 'close', answered or not: build an error (and its stack trace) only when
      // the exchange has not settled yet, never on the hot path of an answered stream.
      let settled = false;
      stream.on('end', () => {
        settled = true;
        if (status === 0) reject(new Http2RequestError('connection', 'stream ended without an answer'));
        else
          resolve({
            status,
            headers,
            body: chunks.length === 0 ? '' : Buffer.concat(chunks).toString('utf8'),
          });
      });
      stream.on('error', () => {
        if (settled) return;
        settled = true;
        reject(gate.error ?? new Http2RequestError('connection', 'connection failed'));
      });
      // Reset without an answer (RST_STREAM, session torn down).
      stream.on('close', () => {
        if (settled) return;
        settled = true;
        reject(gate.error ?? new Http2RequestError('connection', 'stream closed without an answer'));
      });
      stream.end(req.body);
    });
  }
}

/** One request's deadline and caller abort: whichever comes first ends the wait or the stream. */
class RequestGate {
  error: Http2RequestError | undefined;
  onEnd: ((err: Http2RequestError) => void) | undefined;
  holdsSlot = false;
  private readonly timer: NodeJS.Timeout;
  private readonly onAbort = () => this.end(new Http2RequestError('aborted', 'attempt aborted'));

  constructor(
    timeoutMs: number,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.timer = setTimeout(() => this.end(new Http2RequestError('timeout', 'no answer in time')), timeoutMs);
    if (signal?.aborted) this.error = new Http2RequestError('aborted', 'attempt aborted');
    else signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  private end(err: Http2RequestError): void {
    if (this.error) return;
    this.error = err;
    this.onEnd?.(err);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.signal?.removeEventListener('abort', this.onAbort);
  }
}

/** `scheme://host:port` of a base URL, and the path prefix it carries (without a trailing slash). */
export function splitBaseUrl(baseUrl: string): { origin: string; prefix: string } {
  const url = new URL(baseUrl);
  return { origin: url.origin, prefix: url.pathname.replace(/\/+$/, '') };
}
