import * as grpc from '@grpc/grpc-js';
import { Code } from '@connectrpc/connect';
import { startEchoServer, type EchoHarness } from './harness';
import { unary, listServicesByReflection } from '../../support/grpc-clients';
import { waitFor } from '../../support/wait';
import { grpcError, connectError } from '../../support/call-errors';

let h: EchoHarness;
beforeAll(async () => {
  h = await startEchoServer();
});
afterAll(async () => {
  await h.close();
});

describe('one implementation, two ports', () => {
  test('a grpc-js client and a Connect JSON client get the same answer from the same RPC', async () => {
    const viaGrpc = await unary<{ message: string; headerEcho: string }>(
      h.grpc,
      'echo',
      { message: 'hello' },
      {
        metadata: { 'x-echo': 'meta' },
      },
    );
    const viaConnect = await h.connect({ 'x-echo': 'meta' }).echo({ message: 'hello' });
    expect(viaGrpc.response.message).toBe('hello');
    expect(viaGrpc.response.headerEcho).toBe('meta');
    expect(viaConnect.message).toBe(viaGrpc.response.message);
    expect(viaConnect.headerEcho).toBe(viaGrpc.response.headerEcho);
  });

  test('response headers and trailers set by the handler reach a grpc-js client as metadata', async () => {
    const { header, trailer } = await unary(
      h.grpc,
      'echo',
      { message: 'x' },
      { metadata: { 'x-echo': 'please' } },
    );
    expect(header.get('x-echo-served')).toEqual(['yes']);
    expect(trailer.get('x-echo-trailer')).toEqual(['done']);
  });

  test('the Connect JSON endpoint answers a plain HTTP POST (as curl would send it)', async () => {
    const res = await fetch(`${h.baseUrl}/svc.testing.v1.EchoService/Echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'curl' }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ message: 'curl' });
  });
});

describe('server streaming', () => {
  test('delivers N messages in order over gRPC', async () => {
    const call = (h.grpc.echoStream as (req: unknown) => grpc.ClientReadableStream<{ seq: number }>).call(
      h.grpc,
      {
        count: 5,
      },
    );
    const seqs: number[] = [];
    for await (const msg of call) seqs.push((msg as { seq: number }).seq);
    expect(seqs).toEqual([0, 1, 2, 3, 4]);
  });

  test('delivers N messages in order over Connect', async () => {
    const seqs: number[] = [];
    for await (const msg of h.connect().echoStream({ count: 5 })) seqs.push(msg.seq);
    expect(seqs).toEqual([0, 1, 2, 3, 4]);
  });

  test('stops the handler when a gRPC client cancels', async () => {
    const abortedBefore = h.impl.abortedStreams;
    const call = (h.grpc.echoStream as (req: unknown) => grpc.ClientReadableStream<{ seq: number }>).call(
      h.grpc,
      {
        count: 0,
        intervalMs: 5,
      },
    );
    const seen: number[] = [];
    await new Promise<void>((resolve) => {
      call.on('data', (m: { seq: number }) => {
        seen.push(m.seq);
        if (seen.length === 3) {
          call.cancel();
          resolve();
        }
      });
      call.on('error', () => undefined);
    });
    await waitFor(() => h.impl.activeStreams === 0);
    expect(seen).toEqual([0, 1, 2]);
    expect(h.impl.abortedStreams).toBe(abortedBefore + 1);
  });

  test('stops the handler when a Connect client aborts', async () => {
    const abortedBefore = h.impl.abortedStreams;
    const controller = new AbortController();
    const seen: number[] = [];
    await expect(
      (async () => {
        for await (const msg of h
          .connect()
          .echoStream({ count: 0, intervalMs: 5 }, { signal: controller.signal })) {
          seen.push(msg.seq);
          if (seen.length === 3) controller.abort();
        }
      })(),
    ).rejects.toThrow();
    await waitFor(() => h.impl.activeStreams === 0);
    expect(seen).toEqual([0, 1, 2]);
    expect(h.impl.abortedStreams).toBe(abortedBefore + 1);
  });
});

describe('deadlines', () => {
  test('a gRPC deadline shorter than the handler gives DEADLINE_EXCEEDED', async () => {
    const err = await grpcError(
      unary(h.grpc, 'echo', { message: 'slow', delayMs: 5000 }, { deadlineMs: 100 }),
    );
    expect(err.code).toBe(grpc.status.DEADLINE_EXCEEDED);
  });

  test('a Connect timeout shorter than the handler gives deadline_exceeded', async () => {
    const err = await connectError(h.connect().echo({ message: 'slow', delayMs: 5000 }, { timeoutMs: 100 }));
    expect(err.code).toBe(Code.DeadlineExceeded);
  });
});

describe('errors', () => {
  test('a thrown domain error arrives with its code and message on both ports', async () => {
    const g = await grpcError(unary(h.grpc, 'echo', { failCode: 'NOT_FOUND' }));
    expect(g.code).toBe(grpc.status.NOT_FOUND);
    expect(g.details).toBe('echo target not found');
    const c = await connectError(h.connect().echo({ failCode: 'NOT_FOUND' }));
    expect(c.code).toBe(Code.NotFound);
    expect(c.rawMessage).toBe('echo target not found');
  });

  test('an unexpected error becomes INTERNAL without internals on both ports', async () => {
    const g = await grpcError(unary(h.grpc, 'echo', { failCode: 'BOOM' }));
    expect(g.code).toBe(grpc.status.INTERNAL);
    expect(g.details).toBe('internal error');
    expect(JSON.stringify(g.metadata.getMap())).not.toMatch(/password|SELECT/);
    const res = await fetch(`${h.baseUrl}/svc.testing.v1.EchoService/Echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ failCode: 'BOOM' }),
    });
    const text = await res.text();
    expect(res.status).toBe(500);
    expect(JSON.parse(text)).toEqual({ code: 'internal', message: 'internal error' });
    expect(text).not.toMatch(/password|SELECT|at /);
  });

  test('malformed JSON on the Connect port is INVALID_ARGUMENT, not a crash', async () => {
    const res = await fetch(`${h.baseUrl}/svc.testing.v1.EchoService/Echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"message": ',
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: string }).code).toBe('invalid_argument');
  });

  test('an unknown path on the HTTP port is a JSON 404', async () => {
    const res = await fetch(`${h.baseUrl}/nope`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_found');
  });
});

describe('metrics', () => {
  test('every call is counted by service, method, code and transport', async () => {
    await unary(h.grpc, 'echo', { message: 'count me' });
    await grpcError(unary(h.grpc, 'echo', { failCode: 'NOT_FOUND' }));
    const text = await h.registry.metrics();
    expect(text).toMatch(
      /rpc_server_handled_total\{rpc_service="svc.testing.v1.EchoService",rpc_method="Echo",rpc_code="ok",transport="grpc"\} [1-9]/,
    );
    expect(text).toMatch(/rpc_code="not_found",transport="grpc"\} [1-9]/);
    expect(text).toMatch(
      /rpc_server_handling_seconds_count\{rpc_service="svc.testing.v1.EchoService",rpc_method="Echo",transport="http"\} [1-9]/,
    );
  });
});

describe('calls in flight', () => {
  test('when concurrent calls on both ports, ok and failed, have ended, the in-flight gauge is back at 0', async () => {
    const inFlight = async (): Promise<number[]> =>
      ((await h.registry.getSingleMetric('rpc_server_in_flight')?.get())?.values ?? [])
        .filter((v) => v.labels.rpc_method === 'Echo')
        .map((v) => v.value);
    await Promise.all([
      ...Array.from({ length: 5 }, (_, i) => unary(h.grpc, 'echo', { message: `grpc ${i}` })),
      ...Array.from({ length: 5 }, (_, i) => h.connect().echo({ message: `connect ${i}` })),
      grpcError(unary(h.grpc, 'echo', { failCode: 'NOT_FOUND' })),
      connectError(h.connect().echo({ failCode: 'NOT_FOUND' })),
    ]);
    expect(await inFlight()).toEqual([0]);
  });
});

describe('reflection', () => {
  test('lists the registered services and health', async () => {
    const names = await listServicesByReflection(h.grpcAddress);
    expect(names).toEqual(expect.arrayContaining(['svc.testing.v1.EchoService', 'grpc.health.v1.Health']));
  });
});
