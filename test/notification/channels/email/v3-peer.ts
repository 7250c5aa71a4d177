/**
 * A local HTTP/1.1 server speaking the SendGrid v3 mail-send protocol for the http_api mailer tests:
 * records each request and answers from a script (202 with X-Message-Id by default).
 */
import http from 'node:http';
import type { Socket } from 'node:net';

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
  const sockets = new Set<Socket>();
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
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  peer.baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  peer.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return peer;
}
