/**
 * The one bounded outbound HTTP request: the REST drivers of the channels (the `http_api` mailer, the
 * `sms_gateway` SMS driver), the monitor's HTTP health probes and the alert webhooks all send through
 * it. Its policy, the same for every use, each use giving its own numbers:
 *
 * - Time: a timeout (`timeoutMs`) from the request's start to the end of the answer, and the caller's
 *   abort signal; either ends the request and closes its connection.
 * - Size: at most `maxBodyBytes` of the answer's body are read (default 64 KiB); beyond, the transfer
 *   is stopped rather than buffered, and the answer keeps its status.
 * - Redirects are never followed: a 3xx is an answer like any other, so a request (its body, its
 *   credentials) never reaches a host nobody configured; each caller decides what a 3xx means.
 * - It never rejects: it resolves with the answer, or with why there was none (timeout, aborted, or a
 *   connection failure with the socket error's code; an unusable URL is a connection failure too).
 * - A body is sent with its `Content-Length` (some receivers refuse chunked uploads).
 */
import http from 'node:http';
import https from 'node:https';

/** The most of an answer's body read when the caller does not say. */
export const DEFAULT_MAX_ANSWER_BYTES = 64 * 1024;

/** An answer: a status line arrived. */
export interface HttpAnswer {
  status: number;
  /** Header names lower-case. */
  headers: Record<string, string | string[] | undefined>;
  /** The body as text, cut at the request's `maxBodyBytes`. */
  body: string;
  /**
   * Epoch ms when the answer arrived (for Retry-After given as an HTTP date); `boundedRequest` always
   * sets it, an answer built elsewhere may leave it out (then: when it is classified).
   */
  receivedAt?: number;
}

/** Why a request ended without an answer. */
export interface NoAnswer {
  kind: 'timeout' | 'aborted' | 'connection';
  /** The socket error's code (ECONNREFUSED, ECONNRESET, ERR_INVALID_URL, ...), for connection failures. */
  code?: string;
}

/** What one request needs. */
export interface BoundedRequest {
  method: string;
  url: URL | string;
  headers?: Record<string, string>;
  body?: string;
  /** The connection agent (a backend's keep-alive agent bounds its sockets); `false`: one connection. */
  agent?: http.Agent | false;
  timeoutMs: number;
  /** Bytes of the answer's body read at most (default {@link DEFAULT_MAX_ANSWER_BYTES}). */
  maxBodyBytes?: number;
  signal?: AbortSignal;
}

/** True when `result` is an answer (a status line arrived). */
export function isAnswer(result: HttpAnswer | NoAnswer): result is HttpAnswer {
  return 'status' in result;
}

/** Sends one request; resolves with the answer or with why there was none. */
export function boundedRequest(r: BoundedRequest): Promise<HttpAnswer | NoAnswer> {
  const max = r.maxBodyBytes ?? DEFAULT_MAX_ANSWER_BYTES;
  return new Promise((resolve) => {
    let ended: NoAnswer | undefined;
    let settled = false;
    let req: http.ClientRequest | undefined;
    const stop = (why: NoAnswer) => {
      ended ??= why;
      req?.destroy();
    };
    const timer = setTimeout(() => stop({ kind: 'timeout' }), r.timeoutMs);
    const onAbort = () => stop({ kind: 'aborted' });
    // One listener, removed when the request ends: the signal may outlive many requests.
    r.signal?.addEventListener('abort', onAbort, { once: true });
    const finish = (result: HttpAnswer | NoAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      r.signal?.removeEventListener('abort', onAbort);
      resolve(result);
    };
    const headers = { ...r.headers };
    if (r.body !== undefined && !Object.keys(headers).some((k) => k.toLowerCase() === 'content-length')) {
      headers['content-length'] = String(Buffer.byteLength(r.body));
    }
    // Already aborted: nothing is sent, no connection is opened.
    if (r.signal?.aborted) return finish({ kind: 'aborted' });
    try {
      const url = typeof r.url === 'string' ? new URL(r.url) : r.url;
      const client = url.protocol === 'https:' ? https : http;
      req = client.request(url, { method: r.method, headers, agent: r.agent });
    } catch (err) {
      // A URL node:http cannot use: a connection failure of this request, not a crash of the caller.
      finish({ kind: 'connection', code: (err as NodeJS.ErrnoException).code ?? 'ERR_INVALID_URL' });
      return;
    }
    req.on('error', (err: NodeJS.ErrnoException) => finish(ended ?? { kind: 'connection', code: err.code }));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        if (size < max) chunks.push(chunk.subarray(0, max - size));
        size += chunk.length;
        // More than we will ever read: stop the transfer instead of buffering it.
        if (size >= max) res.destroy();
      });
      const answer = (): HttpAnswer => ({
        status: res.statusCode ?? 0,
        headers: res.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAt: Date.now(),
      });
      res.on('end', () => finish(answer()));
      // A status line arrived: a cut body still classifies by its status, unless we cut it short
      // because of our own timeout or abort.
      res.on('close', () => finish(ended ?? answer()));
      res.on('error', () => undefined);
    });
    req.end(r.body);
  });
}
