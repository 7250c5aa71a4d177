/**
 * A local HTTP/1.1 server speaking the SendGrid v3 mail-send protocol for the http_api mailer tests:
 * records each request and answers from a script (202 with X-Message-Id by default).
 */
import { createSign, generateKeyPairSync, type KeyObject } from 'node:crypto';
import http from 'node:http';
import { serveStandIn } from '../../../support/stand-in-server';

/** One request the peer received. */
export interface V3Request {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** How the peer answers the next request. */
export type V3Answer =
  { kind: 'answer'; status: number; headers?: Record<string, string>; body?: string } | { kind: 'hang' };

/** A running peer. */
export interface V3Peer {
  baseUrl: string;
  requests: V3Request[];
  script: V3Answer[];
  close(): Promise<void>;
}

/** Starts a peer on 127.0.0.1 and a free port. */
export async function startV3Peer(): Promise<V3Peer> {
  let nextId = 1;
  const peer: V3Peer = { baseUrl: '', requests: [], script: [], close: async () => undefined };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      peer.requests.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      const answer = peer.script.shift() ?? {
        kind: 'answer',
        status: 202,
        headers: { 'X-Message-Id': `msg-${nextId++}` },
      };
      if (answer.kind === 'hang') return; // never answers; the client's timeout must end it
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      res.end(answer.body ?? '');
    });
  });
  const served = await serveStandIn(server);
  peer.baseUrl = served.baseUrl;
  peer.close = served.close;
  return peer;
}

/** A P-256 key pair for the signed event webhook; `publicKey` is base64 DER as the provider shows it. */
export function eventWebhookKeys(): { publicKey: string; privateKey: KeyObject } {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return { publicKey: publicKey.export({ format: 'der', type: 'spki' }).toString('base64'), privateKey };
}

/**
 * Posts an event batch as the provider's signed event webhook does: ECDSA P-256 over the timestamp
 * header followed by the raw body. `timestamp` defaults to now; `signature` replaces the computed one
 * (forgeries), null sends none.
 */
export async function postEvents(
  url: string,
  events: readonly Record<string, unknown>[],
  privateKey: KeyObject,
  opts: { timestamp?: number; signature?: string | null; body?: string } = {},
): Promise<{ status: number; body: string }> {
  // The provider puts each event on its own line, with CRLF after each: signed as sent.
  const body = opts.body ?? JSON.stringify(events).split('},{').join('},\r\n{') + '\r\n';
  const timestamp = String(opts.timestamp ?? Math.floor(Date.now() / 1000));
  const signature =
    opts.signature === undefined
      ? createSign('sha256')
          .update(timestamp + body)
          .sign(privateKey)
          .toString('base64')
      : opts.signature;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-twilio-email-event-webhook-timestamp': timestamp,
  };
  if (signature !== null) headers['x-twilio-email-event-webhook-signature'] = signature;
  const res = await fetch(url, { method: 'POST', headers, body });
  return { status: res.status, body: await res.text() };
}
