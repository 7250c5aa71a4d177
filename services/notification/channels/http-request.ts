/**
 * One HTTP/1.1 request to a provider API, bounded in time (a timeout and the attempt's abort signal)
 * and in the bytes read back: the one request path of the REST drivers (the `http_api` mailer, the
 * `sms_gateway` SMS driver). It resolves with the answer, or with why there was none; it never
 * rejects, so a driver only classifies.
 */
import http from 'node:http';
import https from 'node:https';
import type { SendOutcome } from '../delivery/driver';
import type { OutcomeDecision } from './outcome-table';

/** The most of an answer's body a driver reads; the rest is never buffered. */
export const MAX_ANSWER_BYTES = 64 * 1024;

/** A provider's answer, as the outcome tables of every REST driver read it (the one answer type). */
export interface HttpAnswer {
  status: number;
  /** Header names lower-case. */
  headers: Record<string, string | string[] | undefined>;
  /** The body as text, cut at MAX_ANSWER_BYTES. */
  body: string;
  /**
   * Epoch ms when the answer arrived (for Retry-After given as an HTTP date); `boundedRequest` always
   * sets it, an answer built elsewhere may leave it out (then: when it is classified).
   */
  receivedAt?: number;
}

/** Why a request ended without an answer (the keys of each driver's error-outcome table). */
export interface NoAnswer {
  kind: 'timeout' | 'aborted' | 'connection';
  /** The socket error's code (ECONNREFUSED, ECONNRESET, ...), for connection failures. */
  code?: string;
}

/** What one request needs. */
export interface BoundedRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body?: string;
  /** The keep-alive agent of the backend (bounds its sockets). */
  agent: http.Agent;
  timeoutMs: number;
  signal?: AbortSignal;
}

/** Sends one request; resolves with the answer or with why there was none. */
export function boundedRequest(r: BoundedRequest): Promise<HttpAnswer | NoAnswer> {
  return new Promise((resolve) => {
    let ended: NoAnswer | undefined;
    let settled = false;
    const client = r.url.protocol === 'https:' ? https : http;
    const req = client.request(r.url, { method: r.method, headers: r.headers, agent: r.agent });
    const stop = (why: NoAnswer) => {
      ended ??= why;
      req.destroy();
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
    if (r.signal?.aborted) stop({ kind: 'aborted' });
    req.on('error', (err: NodeJS.ErrnoException) => finish(ended ?? { kind: 'connection', code: err.code }));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        if (size >= MAX_ANSWER_BYTES) return;
        chunks.push(chunk.subarray(0, MAX_ANSWER_BYTES - size));
        size += chunk.length;
        // More than we will ever read: stop the transfer instead of buffering it.
        if (size >= MAX_ANSWER_BYTES) res.destroy();
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

/**
 * The outcome of a request that got no answer, from the driver's own table of those cases (kept
 * beside the driver as data): the row's class, its meaning (with the socket error's code) as reason.
 */
export function noAnswerOutcome(
  table: Readonly<Record<NoAnswer['kind'], OutcomeDecision>>,
  why: NoAnswer,
): SendOutcome {
  const row = table[why.kind];
  return {
    class: row.class,
    reason: why.code ? `${row.meaning} (${why.code})` : row.meaning,
    providerCode: why.code ?? why.kind,
  };
}
