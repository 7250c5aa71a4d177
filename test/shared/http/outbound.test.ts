/**
 * The one bounded outbound HTTP request (shared/http/outbound.ts) that the REST drivers, the
 * monitor's HTTP probes and the alert webhooks use: bounded in time, in the bytes read back, never
 * following a redirect, never rejecting.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:net';
import { boundedRequest } from '../../../shared/http/outbound';
import { listen, type TestServer } from '../monitoring/helpers';

const servers: TestServer[] = [];
async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<TestServer> {
  const server = await listen(handler);
  servers.push(server);
  return server;
}
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

describe('boundedRequest', () => {
  it('answers with status, headers and body, sending a body with its Content-Length', async () => {
    let seen: IncomingMessage['headers'] = {};
    let body = '';
    const server = await serve((req, res) => {
      seen = req.headers;
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        res.setHeader('x-answer', 'yes');
        res.statusCode = 201;
        res.end('créé 😀');
      });
    });
    const answer = await boundedRequest({
      method: 'POST',
      url: `${server.url}/x`,
      headers: { 'content-type': 'application/json' },
      body: '{"t":"日本語 😀"}',
      timeoutMs: 5000,
    });
    expect(answer).toMatchObject({ status: 201, body: 'créé 😀', headers: { 'x-answer': 'yes' } });
    expect(body).toBe('{"t":"日本語 😀"}');
    expect(seen['content-length']).toBe(String(Buffer.byteLength('{"t":"日本語 😀"}')));
    expect(seen['transfer-encoding']).toBeUndefined();
  });

  it('reads at most maxBodyBytes of an endless answer and keeps its status', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(503);
      const chunk = Buffer.alloc(16 * 1024, 'a');
      const pump = () => {
        while (res.write(chunk));
      };
      res.on('drain', pump);
      pump();
    });
    const answer = await boundedRequest({
      method: 'GET',
      url: server.url,
      timeoutMs: 10000,
      maxBodyBytes: 1000,
    });
    expect(answer).toMatchObject({ status: 503 });
    expect('body' in answer && answer.body.length).toBe(1000);
  });

  it('does not follow a redirect: the 3xx is the answer and the other host sees nothing', async () => {
    let elsewhere = 0;
    const other = await serve((_req, res) => {
      elsewhere++;
      res.end('ok');
    });
    const server = await serve((_req, res) => {
      res.writeHead(302, { location: `${other.url}/steal` });
      res.end();
    });
    const answer = await boundedRequest({ method: 'POST', url: server.url, body: 'secret', timeoutMs: 5000 });
    expect(answer).toMatchObject({ status: 302 });
    expect(elsewhere).toBe(0);
  });

  it('ends a request that gets no answer in time as a timeout', async () => {
    const server = await serve(() => undefined);
    await expect(boundedRequest({ method: 'GET', url: server.url, timeoutMs: 50 })).resolves.toEqual({
      kind: 'timeout',
    });
  });

  it('ends a request whose signal aborts as aborted', async () => {
    const server = await serve(() => undefined);
    const stop = new AbortController();
    const pending = boundedRequest({ method: 'GET', url: server.url, timeoutMs: 10000, signal: stop.signal });
    stop.abort();
    await expect(pending).resolves.toEqual({ kind: 'aborted' });
  });

  it('a refused connection and an unusable URL are answers without a status, never a throw', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as { port: number }).port;
    await new Promise<void>((r) => closed.close(() => r()));
    await expect(
      boundedRequest({ method: 'GET', url: `http://127.0.0.1:${port}/`, timeoutMs: 5000 }),
    ).resolves.toEqual({
      kind: 'connection',
      code: 'ECONNREFUSED',
    });
    await expect(
      boundedRequest({ method: 'GET', url: 'ftp://example.invalid/', timeoutMs: 5000 }),
    ).resolves.toMatchObject({
      kind: 'connection',
    });
    await expect(boundedRequest({ method: 'GET', url: 'not a url', timeoutMs: 5000 })).resolves.toMatchObject(
      {
        kind: 'connection',
      },
    );
  });
});
