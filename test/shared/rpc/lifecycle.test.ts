import * as grpc from '@grpc/grpc-js';
import { Code, ConnectError } from '@connectrpc/connect';
import { startEchoServer } from './harness';
import { healthCheck, healthClient, unary } from '../../support/grpc-clients';
import { waitFor } from '../../support/wait';

describe('grpc.health.v1 through the grpc-health-check client', () => {
  test('Check "" and the service name answer SERVING once ready', async () => {
    const h = await startEchoServer();
    const client = healthClient(h.grpcAddress);
    try {
      expect(await healthCheck(client, '')).toBe('SERVING');
      expect(await healthCheck(client, 'svc.testing.v1.EchoService')).toBe('SERVING');
    } finally {
      client.close();
      await h.close();
    }
  });

  test('Check of an unknown service is NOT_FOUND', async () => {
    const h = await startEchoServer();
    const client = healthClient(h.grpcAddress);
    try {
      await expect(healthCheck(client, 'no.such.Service')).rejects.toMatchObject({
        code: grpc.status.NOT_FOUND,
      });
    } finally {
      client.close();
      await h.close();
    }
  });

  test('Watch reports NOT_SERVING when shutdown starts', async () => {
    const h = await startEchoServer();
    const client = healthClient(h.grpcAddress);
    const statuses: string[] = [];
    const watch = (client.watch as (r: unknown) => grpc.ClientReadableStream<{ status: string }>).call(
      client,
      {
        service: '',
      },
    );
    watch.on('error', () => undefined);
    const notServing = new Promise<void>((resolve) =>
      watch.on('data', (m: { status: string }) => {
        statuses.push(m.status);
        if (m.status === 'NOT_SERVING') resolve();
      }),
    );
    await waitFor(() => statuses.length > 0);
    const shutdown = h.server.shutdown();
    await notServing;
    await shutdown;
    client.close();
    h.grpc.close();
    expect(statuses).toEqual(['SERVING', 'NOT_SERVING']);
  });
});

describe('service-to-service auth', () => {
  const token = 'test-token-0123456789';

  test('a missing or wrong token is UNAUTHENTICATED on the gRPC port; the right one passes', async () => {
    const h = await startEchoServer({ apiTokens: ['other-token', token] });
    try {
      await expect(unary(h.grpc, 'echo', { message: 'x' })).rejects.toMatchObject({
        code: grpc.status.UNAUTHENTICATED,
      });
      await expect(
        unary(h.grpc, 'echo', { message: 'x' }, { metadata: { authorization: 'Bearer wrong' } }),
      ).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
      const ok = await unary<{ message: string }>(
        h.grpc,
        'echo',
        { message: 'x' },
        {
          metadata: { authorization: `Bearer ${token}` },
        },
      );
      expect(ok.response.message).toBe('x');
    } finally {
      await h.close();
    }
  });

  test('a missing or wrong token is UNAUTHENTICATED on the HTTP port; the right one passes', async () => {
    const h = await startEchoServer({ apiTokens: [token] });
    try {
      const missing = await h
        .connect()
        .echo({ message: 'x' })
        .catch((e: unknown) => ConnectError.from(e));
      expect(missing).toMatchObject({ code: Code.Unauthenticated });
      const wrong = await h
        .connect({ authorization: 'Bearer nope' })
        .echo({ message: 'x' })
        .catch((e: unknown) => ConnectError.from(e));
      expect(wrong).toMatchObject({ code: Code.Unauthenticated });
      const res = await fetch(`${h.baseUrl}/svc.testing.v1.EchoService/Echo`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      expect(res.status).toBe(401);
      expect((await h.connect({ authorization: `Bearer ${token}` }).echo({ message: 'y' })).message).toBe(
        'y',
      );
    } finally {
      await h.close();
    }
  });

  test('health probes need no token', async () => {
    const h = await startEchoServer({ apiTokens: [token] });
    const client = healthClient(h.grpcAddress);
    try {
      expect(await healthCheck(client, '')).toBe('SERVING');
    } finally {
      client.close();
      await h.close();
    }
  });
});

describe('request size limits', () => {
  test('an oversized request is RESOURCE_EXHAUSTED on the gRPC port and refused on the HTTP port, and the server keeps serving', async () => {
    const h = await startEchoServer({ maxRequestBytes: 64 * 1024 });
    try {
      const big = 'x'.repeat(200 * 1024);
      await expect(unary(h.grpc, 'echo', { message: big })).rejects.toMatchObject({
        code: grpc.status.RESOURCE_EXHAUSTED,
      });
      const res = await fetch(`${h.baseUrl}/svc.testing.v1.EchoService/Echo`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: big }),
      });
      expect([413, 429]).toContain(res.status);
      expect(((await res.json()) as { code: string }).code).toBe('resource_exhausted');
      expect((await unary<{ message: string }>(h.grpc, 'echo', { message: 'small' })).response.message).toBe(
        'small',
      );
    } finally {
      await h.close();
    }
  });
});

describe('graceful shutdown', () => {
  test('an in-flight unary call finishes while an open stream ends with UNAVAILABLE', async () => {
    const h = await startEchoServer();
    const slow = unary<{ message: string }>(h.grpc, 'echo', { message: 'finish me', delayMs: 300 });
    const stream = (h.grpc.echoStream as (req: unknown) => grpc.ClientReadableStream<{ seq: number }>).call(
      h.grpc,
      {
        count: 0,
        intervalMs: 20,
      },
    );
    const streamEnd = new Promise<grpc.ServiceError>((resolve) => stream.on('error', resolve));
    stream.on('data', () => undefined);
    await waitFor(() => h.impl.activeStreams === 1);
    await h.server.shutdown();
    expect((await slow).response.message).toBe('finish me');
    expect((await streamEnd).code).toBe(grpc.status.UNAVAILABLE);
    h.grpc.close();
  });
});
