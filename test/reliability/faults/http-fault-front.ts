/**
 * An HTTP/1.1 front for the provider stand-ins of the REST drivers (the v3 mail API, the Twilio
 * Messages API): it reads each request whole, then either forwards it to the stand-in behind it and
 * passes the answer back, or fails it in one of the ways a provider or the network fails: an error
 * status (500 with a cut JSON body, 503 or 429 with Retry-After, any status), no answer at all (the
 * driver's timeout must end it), a reset connection, bytes that are not HTTP, or the stand-in's 2xx
 * cut off after the stand-in accepted the message.
 *
 * Which requests fail is up to the test: `decide` sees every request (method, path, body) and answers
 * its fault; `outage` overrides it for every request, health probes included.
 */
import http from 'node:http';
import type { Socket } from 'node:net';

/** What the front does with one request. */
export type HttpFault =
  /** Pass it to the stand-in and its answer back. */
  | { kind: 'forward' }
  /** Answer this status without asking the stand-in; `cut` declares a longer body than it sends, then closes. */
  | { kind: 'status'; status: number; headers?: Record<string, string>; body?: string; cut?: boolean }
  /** Read the request, never answer. */
  | { kind: 'hang' }
  /** Reset the connection (TCP RST) without answering. */
  | { kind: 'reset' }
  /** Answer bytes that are not HTTP, then close. */
  | { kind: 'garbage' }
  /** Forward it (the stand-in accepts), then pass back the status and half the body, and close. */
  | { kind: 'cut-after-accept' };

/** One request as `decide` sees it. */
export interface FrontRequest {
  method: string;
  path: string;
  body: string;
}

/** A running front. */
export interface HttpFaultFront {
  /** The base URL the driver is given instead of the stand-in's. */
  baseUrl: string;
  /** The fault of each request (forward unless told otherwise). */
  decide: (req: FrontRequest) => HttpFault;
  /** When set, every request gets this fault instead (a provider down for everyone). */
  outage: HttpFault | undefined;
  /** Requests the front failed, by fault kind (`status:503` for statuses). */
  readonly failed: Map<string, number>;
  /** Requests passed to the stand-in. */
  forwarded: number;
  close(): Promise<void>;
}

/** Bytes no HTTP parser accepts as a status line. */
const GARBAGE = Buffer.from('\u0000\u0016\u0003\u0001 not an HTTP answer \r\n\r\n', 'latin1');

/**
 * Sends the status line, headers and `part`, then closes the connection (FIN, after what was written
 * has left): the client has the status and a body shorter than its content-length promised.
 */
function cutShort(res: http.ServerResponse, part: Buffer): void {
  res.flushHeaders();
  if (part.length > 0) res.write(part);
  res.socket?.end();
}

/** Starts a front on 127.0.0.1 and a free port, forwarding to `target` (the stand-in's base URL). */
export async function startHttpFaultFront(target: string): Promise<HttpFaultFront> {
  const upstream = new URL(target);
  const sockets = new Set<Socket>();
  // The front's own keep-alive agent to the stand-in, closed with the front.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  const front: HttpFaultFront = {
    baseUrl: '',
    decide: () => ({ kind: 'forward' }),
    outage: undefined,
    failed: new Map(),
    forwarded: 0,
    close: async () => undefined,
  };
  const count = (key: string) => front.failed.set(key, (front.failed.get(key) ?? 0) + 1);

  /** Sends the request on to the stand-in; resolves with its whole answer. */
  const forward = (req: http.IncomingMessage, body: Buffer) =>
    new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      front.forwarded++;
      const headers = { ...req.headers, host: upstream.host };
      const out = http.request(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers, agent },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
          );
          res.on('error', reject);
        },
      );
      out.on('error', reject);
      out.end(body);
    });

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const fault =
        front.outage ??
        front.decide({ method: req.method ?? '', path: req.url ?? '', body: body.toString() });
      void (async () => {
        switch (fault.kind) {
          case 'forward':
          case 'cut-after-accept': {
            const answer = await forward(req, body);
            const headers = { ...answer.headers };
            delete headers['transfer-encoding'];
            delete headers.connection;
            if (fault.kind === 'forward') {
              res.writeHead(answer.status, { ...headers, 'content-length': String(answer.body.length) });
              res.end(answer.body);
              return;
            }
            count(fault.kind);
            // The message is accepted; its answer promises more than it delivers (an empty 202 too).
            res.writeHead(answer.status, { ...headers, 'content-length': String(answer.body.length + 16) });
            cutShort(res, answer.body.subarray(0, Math.floor(answer.body.length / 2)));
            return;
          }
          case 'status': {
            count(`status:${fault.status}`);
            const text = fault.body ?? '';
            const length = Buffer.byteLength(text);
            res.writeHead(fault.status, {
              'content-type': 'application/json',
              ...fault.headers,
              'content-length': String(fault.cut ? length * 2 + 16 : length),
            });
            if (!fault.cut) return res.end(text);
            cutShort(res, Buffer.from(text));
            return;
          }
          case 'hang':
            count('hang');
            return; // the driver's timeout ends it; close() destroys what is left
          case 'reset':
            count('reset');
            req.socket.resetAndDestroy();
            return;
          case 'garbage':
            count('garbage');
            req.socket.end(GARBAGE);
            return;
        }
      })().catch(() => {
        // The stand-in itself failed: the driver sees a reset connection, as from a broken proxy.
        req.socket.destroy();
      });
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  front.baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  front.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      agent.destroy();
      server.close(() => resolve());
    });
  return front;
}
