/**
 * Streams on both ports: nothing stays attached after a stream ends, the open-stream cap, headers
 * sent at once, and a client that closes its stream is CANCELED (not an error) on both ports.
 */
import { getEventListeners } from 'node:events';
import * as grpc from '@grpc/grpc-js';
import { ServerWritableStreamImpl } from '@grpc/grpc-js/build/src/server-call';
import { Code, ConnectError, type HandlerContext } from '@connectrpc/connect';
import { capturingLogger, startEchoServer, type EchoHarness } from './harness';
import { EchoServiceImpl } from '../../support/echo-service';
import { healthCheck, healthClient } from '../../support/grpc-clients';
import { waitFor } from '../../support/wait';

type StreamCall = grpc.ClientReadableStream<{ seq: number }>;

function openStream(h: EchoHarness, req: { count: number; intervalMs: number }): StreamCall {
  return (h.grpc.echoStream as (req: unknown) => StreamCall).call(h.grpc, req);
}

/** Resolves with the first message, or rejects with the call's error. */
function firstMessage(call: StreamCall): Promise<{ seq: number }> {
  return new Promise((resolve, reject) => {
    call.once('data', resolve);
    call.once('error', reject);
  });
}

/** Resolves when the call has ended, whatever its status. */
function ended(call: StreamCall): Promise<void> {
  return new Promise((resolve) => {
    call.on('error', () => undefined);
    call.once('status', () => resolve());
  });
}

/**
 * Dependant signals Node keeps on a signal for every `AbortSignal.any()` it is part of (an internal
 * set; on Node 20 its entries outlive the dependant signals).
 */
function dependantSignals(signal: AbortSignal): number {
  const key = Object.getOwnPropertySymbols(signal).find((s) => s.description === 'kDependantSignals');
  const set = key ? (signal as unknown as Record<symbol, Set<unknown> | undefined>)[key] : undefined;
  return set?.size ?? 0;
}

/** An EchoService whose stream says nothing until its call ends. */
class QuietEcho extends EchoServiceImpl {
  override async *echoStream(_req: unknown, ctx: HandlerContext) {
    this.activeStreams++;
    try {
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
      throw ctx.signal.reason;
    } finally {
      this.activeStreams--;
    }
    // Never reached; makes this an async generator of the right type.
    yield { seq: 0 };
  }
}

describe('nothing stays attached after a stream ends', () => {
  let h: EchoHarness;
  beforeAll(async () => {
    h = await startEchoServer();
  });
  afterAll(async () => {
    await h.close();
  });

  test('10,000 gRPC streams opened and ended leave no listener or dependant on the shutdown signal', async () => {
    const signal = h.server.shutdownSignal;
    const baseline = getEventListeners(signal, 'abort').length;
    const total = 10_000;
    const batch = 200;
    for (let done = 0; done < total; done += batch) {
      await Promise.all(
        // Streams that end on their own: cancelling 10,000 at this rate would trip Node's HTTP/2
        // rapid-reset protection on the client's session (cancelled streams are tested below).
        Array.from({ length: batch }, async () => {
          const call = openStream(h, { count: 1, intervalMs: 0 });
          const end = ended(call);
          await firstMessage(call);
          await end;
        }),
      );
    }
    await waitFor(() => h.impl.activeStreams === 0, 'every handler to end');
    expect(getEventListeners(signal, 'abort')).toHaveLength(baseline);
    expect(dependantSignals(signal)).toBe(0);
  }, 180_000);

  test('500 Connect streams closed by their client leave nothing on the shutdown signal either', async () => {
    const signal = h.server.shutdownSignal;
    const baseline = getEventListeners(signal, 'abort').length;
    const client = h.connect();
    for (let done = 0; done < 500; done += 50) {
      await Promise.all(
        Array.from({ length: 50 }, async () => {
          const controller = new AbortController();
          try {
            // Messages keep flowing: connect-node's HTTP/1.1 client notices its own abort on the
            // next chunk it reads.
            for await (const _ of client.echoStream(
              { count: 0, intervalMs: 20 },
              { signal: controller.signal },
            )) {
              controller.abort();
            }
          } catch (err) {
            expect(ConnectError.from(err).code).toBe(Code.Canceled);
          }
        }),
      );
    }
    await waitFor(() => h.impl.activeStreams === 0, 'every handler to end');
    expect(getEventListeners(signal, 'abort')).toHaveLength(baseline);
    expect(dependantSignals(signal)).toBe(0);
  }, 120_000);

  test('a long stream that waits for flow control many times does not pile up listeners on its call', async () => {
    // The server's call object, watched as it writes (grpc-js's own class, as the server uses it):
    // grpc-js removes every listener when a call ends, so the pile-up shows only while it runs.
    let calls = 0;
    let most = { cancelled: 0, drain: 0 };
    const proto = ServerWritableStreamImpl.prototype as unknown as { write: (...args: unknown[]) => boolean };
    const write = proto.write;
    proto.write = function (this: NodeJS.EventEmitter, ...args: unknown[]) {
      calls++;
      most = {
        cancelled: Math.max(most.cancelled, this.listenerCount('cancelled')),
        drain: Math.max(most.drain, this.listenerCount('drain')),
      };
      return write.apply(this, args);
    };
    try {
      const call = openStream(h, { count: 20_000, intervalMs: 0 });
      let received = 0;
      await new Promise<void>((resolve, reject) => {
        call.on('data', () => received++);
        call.on('error', reject);
        call.on('end', resolve);
      });
      expect(received).toBe(20_000);
    } finally {
      proto.write = write;
    }
    expect(calls).toBe(20_000);
    // The adapter's own cancel listener, and nothing per wait for flow control.
    expect(most.cancelled).toBeLessThanOrEqual(2);
    expect(most.drain).toBeLessThanOrEqual(1);
  }, 120_000);
});

describe('the open-stream cap (server.max_concurrent_streams)', () => {
  let h: EchoHarness;
  beforeAll(async () => {
    h = await startEchoServer({ maxConcurrentStreams: 2 });
  });
  afterAll(async () => {
    await h.close();
  });

  test('beyond the cap a new stream gets RESOURCE_EXHAUSTED on both ports, and the service stays healthy', async () => {
    const open = [
      openStream(h, { count: 0, intervalMs: 60_000 }),
      openStream(h, { count: 0, intervalMs: 60_000 }),
    ];
    const ends = open.map(ended);
    await Promise.all(open.map(firstMessage));

    const extra = openStream(h, { count: 0, intervalMs: 60_000 });
    await expect(firstMessage(extra)).rejects.toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED });

    let connectCode: Code | undefined;
    try {
      for await (const _ of h.connect().echoStream({ count: 1 })) break;
    } catch (err) {
      connectCode = ConnectError.from(err).code;
    }
    expect(connectCode).toBe(Code.ResourceExhausted);

    // Unary calls and health are not streams: they still work at the cap.
    expect((await h.connect().echo({ message: 'still here' })).message).toBe('still here');
    const health = healthClient(h.grpcAddress);
    try {
      expect(await healthCheck(health)).toBe('SERVING');
    } finally {
      health.close();
    }

    // Once a stream ends, a new one is accepted again.
    open[0]!.cancel();
    await ends[0];
    await waitFor(() => h.impl.activeStreams === 1, 'the cancelled stream to end');
    const again = openStream(h, { count: 1, intervalMs: 0 });
    expect(await firstMessage(again)).toEqual(expect.objectContaining({ seq: 0 }));
    open[1]!.cancel();
    await ends[1];
  });
});

describe('a quiet stream', () => {
  let h: EchoHarness;
  beforeAll(async () => {
    h = await startEchoServer({ impl: new QuietEcho() });
  });
  afterAll(async () => {
    await h.close();
  });

  test('a gRPC client receives the response headers before any message', async () => {
    const call = openStream(h, { count: 0, intervalMs: 0 });
    const end = ended(call);
    let messages = 0;
    call.on('data', () => messages++);
    const metadata = await new Promise<grpc.Metadata>((resolve) => call.once('metadata', resolve));
    expect(metadata).toBeInstanceOf(grpc.Metadata);
    expect(messages).toBe(0);
    call.cancel();
    await end;
  });

  test.each([
    ['Connect', 'application/connect+json', Buffer.from([0, 0, 0, 0, 2, 0x7b, 0x7d])],
    ['gRPC-Web', 'application/grpc-web+proto', Buffer.from([0, 0, 0, 0, 0])],
  ])('a %s client receives the response headers before any message', async (_name, contentType, body) => {
    const controller = new AbortController();
    const res = await fetch(`${h.baseUrl}/svc.testing.v1.EchoService/EchoStream`, {
      method: 'POST',
      headers: { 'Content-Type': contentType },
      body,
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(contentType);
    controller.abort();
    await waitFor(() => h.impl.activeStreams === 0, 'the stream to end');
  });
});

describe('a client that closes its stream', () => {
  let h: EchoHarness;
  let log: ReturnType<typeof capturingLogger>;
  beforeAll(async () => {
    log = capturingLogger();
    h = await startEchoServer({ logger: log.logger });
  });
  afterAll(async () => {
    await h.close();
  });

  test('is CANCELED on both ports: counted as canceled, logged at debug, never as an error', async () => {
    const before = log.lines().length;
    const controller = new AbortController();
    let seen = 0;
    try {
      for await (const _ of h
        .connect()
        .echoStream({ count: 0, intervalMs: 20 }, { signal: controller.signal })) {
        if (++seen === 2) controller.abort();
      }
    } catch {
      // The client's own abort.
    }
    const call = openStream(h, { count: 0, intervalMs: 20 });
    const end = ended(call);
    await firstMessage(call);
    call.cancel();
    await end;
    await waitFor(() => h.impl.activeStreams === 0, 'both handlers to end');

    const metrics = await h.registry.metrics();
    const streamLines = metrics
      .split('\n')
      .filter((l) => l.startsWith('rpc_server_handled_total{') && l.includes('EchoStream'));
    expect(streamLines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/rpc_code="canceled",transport="http"\} 1$/),
        expect.stringMatching(/rpc_code="canceled",transport="grpc"\} 1$/),
      ]),
    );
    expect(streamLines.filter((l) => !l.includes('rpc_code="canceled"'))).toEqual([]);

    const lines = log.lines().slice(before);
    expect(lines.filter((l) => (l.level as number) >= 40)).toEqual([]);
    const cancelled = lines.filter((l) => l.code === 'canceled');
    expect(cancelled.map((l) => l.transport).sort()).toEqual(['grpc', 'http']);
    expect(cancelled.every((l) => l.level === 20)).toBe(true);
  });
});
