/**
 * The one outbound gRPC client stack (shared/rpc/client.ts): a typed Connect client over a grpc-js
 * channel, used by both services' clients of each other. Against a real server (the kit with the
 * echo service on port 0): unary calls and server streams.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { Code, ConnectError } from '@connectrpc/connect';
import { EchoService } from '../../../shared/gen/svc/testing/v1/echo_pb';
import { createGrpcClient } from '../../../shared/rpc/client';
import { startEchoServer, type EchoHarness } from './harness';
import { waitFor } from '../../support/wait';

const token = 'client-test-token-0123456789abcdef';
let h: EchoHarness;
beforeAll(async () => {
  h = await startEchoServer({ apiTokens: [token] });
});
afterAll(async () => {
  await h.close();
});

describe('createGrpcClient', () => {
  it('calls a unary RPC with the bearer token and headers, over grpc-js', async () => {
    const c = createGrpcClient(EchoService, { address: h.grpcAddress, token });
    try {
      const res = await c.client.echo({ message: 'héllo 😀 日本' }, { headers: { 'x-echo': 'ok' } });
      expect(res).toMatchObject({ message: 'héllo 😀 日本', headerEcho: 'ok' });
    } finally {
      c.close();
    }
  });

  it('a refusal is a ConnectError with the server’s code and message', async () => {
    const c = createGrpcClient(EchoService, { address: h.grpcAddress, token });
    try {
      await expect(c.client.echo({ failCode: 'NOT_FOUND' })).rejects.toMatchObject({
        code: Code.NotFound,
        rawMessage: 'echo target not found',
      });
      const missing = createGrpcClient(EchoService, { address: h.grpcAddress });
      const err = await missing.client.echo({ message: 'x' }).catch((e: unknown) => e);
      missing.close();
      expect(err).toBeInstanceOf(ConnectError);
      expect((err as ConnectError).code).toBe(Code.Unauthenticated);
    } finally {
      c.close();
    }
  });

  it('a call past its deadline is DEADLINE_EXCEEDED; a call to nobody is UNAVAILABLE at once', async () => {
    const c = createGrpcClient(EchoService, { address: h.grpcAddress, token, timeoutMs: 50 });
    try {
      await expect(c.client.echo({ delayMs: 2000 })).rejects.toMatchObject({ code: Code.DeadlineExceeded });
    } finally {
      c.close();
    }
    const nobody = createGrpcClient(EchoService, { address: '127.0.0.1:1', timeoutMs: 5000 });
    try {
      await expect(nobody.client.echo({})).rejects.toMatchObject({ code: Code.Unavailable });
    } finally {
      nobody.close();
    }
  });

  it('a call aborted by its signal is CANCELED', async () => {
    const c = createGrpcClient(EchoService, { address: h.grpcAddress, token });
    try {
      const stop = new AbortController();
      const pending = c.client.echo({ delayMs: 5000 }, { signal: stop.signal });
      setTimeout(() => stop.abort(), 20);
      await expect(pending).rejects.toMatchObject({ code: Code.Canceled });
    } finally {
      c.close();
    }
  });

  it('reads a server stream to its end, many more messages than it buffers, in order', async () => {
    const c = createGrpcClient(EchoService, { address: h.grpcAddress, token });
    try {
      const seqs: number[] = [];
      for await (const m of c.client.echoStream({ count: 100 })) seqs.push(m.seq);
      expect(seqs).toEqual(Array.from({ length: 100 }, (_, i) => i));
    } finally {
      c.close();
    }
  });

  it('a refused server stream throws the code when read (UNAUTHENTICATED without the token)', async () => {
    const c = createGrpcClient(EchoService, { address: h.grpcAddress });
    try {
      const err = await (async () => {
        for await (const _ of c.client.echoStream({ count: 3 })) return 'read a message';
        return 'ended quietly';
      })().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConnectError);
      expect((err as ConnectError).code).toBe(Code.Unauthenticated);
    } finally {
      c.close();
    }
  });

  it('a server stream to nobody throws UNAVAILABLE', async () => {
    const nobody = createGrpcClient(EchoService, { address: '127.0.0.1:1' });
    try {
      const err = await (async () => {
        for await (const _ of nobody.client.echoStream({ count: 1 })) return 'read';
        return 'ended quietly';
      })().catch((e: unknown) => e);
      expect(err).toMatchObject({ code: Code.Unavailable });
    } finally {
      nobody.close();
    }
  });

  it('aborting the signal of an endless server stream cancels it on the server (CANCELED)', async () => {
    const c = createGrpcClient(EchoService, { address: h.grpcAddress, token });
    try {
      const before = h.impl.abortedStreams;
      const stop = new AbortController();
      const reading = (async () => {
        for await (const m of c.client.echoStream({ count: 0, intervalMs: 5 }, { signal: stop.signal }))
          if (m.seq === 2) stop.abort();
      })().catch((e: unknown) => e);
      expect(await reading).toMatchObject({ code: Code.Canceled });
      await waitFor(() => h.impl.abortedStreams === before + 1, 'the server saw the abort');
      expect(h.impl.activeStreams).toBe(0);
    } finally {
      c.close();
    }
  });

  it('a server stream whose peer vanished without closing the connection fails UNAVAILABLE (keepalive), not waits forever', async () => {
    // A TCP relay in front of the server that, once told, drops everything in both directions and
    // keeps both sockets open: what a host gone or a NAT that forgot the flow looks like.
    let forwarding = true;
    const sockets: Socket[] = [];
    const [host, port] = h.grpcAddress.split(':') as [string, string];
    const relay: Server = createServer((inbound) => {
      const outbound = createConnection({ host, port: Number(port) });
      sockets.push(inbound, outbound);
      inbound.on('data', (d: Buffer) => void (forwarding && outbound.write(d)));
      outbound.on('data', (d: Buffer) => void (forwarding && inbound.write(d)));
      inbound.on('error', () => undefined);
      outbound.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const address = `127.0.0.1:${(relay.address() as { port: number }).port}`;
    const c = createGrpcClient(EchoService, { address, token, keepalive: { timeMs: 200, timeoutMs: 200 } });
    const stop = new AbortController();
    try {
      const seen: number[] = [];
      const reading = (async () => {
        for await (const m of c.client.echoStream({ count: 0, intervalMs: 5 }, { signal: stop.signal })) {
          seen.push(m.seq);
          if (m.seq === 3) forwarding = false;
        }
        return 'ended quietly';
      })().catch((e: unknown) => e);
      expect(await reading).toMatchObject({ code: Code.Unavailable });
      expect(seen.slice(0, 4)).toEqual([0, 1, 2, 3].map((i) => seen[0]! + i));
    } finally {
      stop.abort();
      c.close();
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => relay.close(resolve));
    }
  });
});
