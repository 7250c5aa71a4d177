/**
 * Unexpected RPC errors reach the error tracker: the service wiring (startServiceMonitoring) hands
 * the tracker to the RPC server, whose error interceptor captures what it answers as INTERNAL. The
 * DSN host is a local HTTP server that decodes the envelopes; the clients are real (grpc-js and
 * Connect), and the caller still sees only the generic INTERNAL.
 */
import * as grpc from '@grpc/grpc-js';
import { Code, type ConnectError } from '@connectrpc/connect';
import { silentLogger } from '../../../../shared/logging/logger';
import { NoopMetricsCollector } from '../../../../shared/monitoring/collector';
import { ServiceLifecycle } from '../../../../shared/runtime/lifecycle';
import { startServiceMonitoring } from '../../../../shared/runtime/service-monitoring';
import { unary } from '../../../support/grpc-clients';
import { startEchoServer } from '../../rpc/harness';
import { dsnHost } from '../fixtures/dsn-host';

const PUBLIC_KEY = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';

type Exceptions = { values: Array<{ type: string; value: string }> };

async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to fail');
}

describe('unexpected RPC errors and the error tracker', () => {
  it('a handler that throws gives one envelope with the exception type; the caller sees INTERNAL', async () => {
    const host = await dsnHost();
    const lifecycle = new ServiceLifecycle(silentLogger());
    const monitoring = await startServiceMonitoring(lifecycle, {
      collector: new NoopMetricsCollector(),
      logger: silentLogger(),
      errorTracking: { dsn: `http://${PUBLIC_KEY}@127.0.0.1:${host.port}/5` },
      environment: 'test',
    });
    expect(monitoring.tracker.active).toBe(true);
    const h = await startEchoServer({ onUnexpectedError: monitoring.onUnexpectedError });
    try {
      const g = (await failure(unary(h.grpc, 'echo', { failCode: 'BOOM' }))) as grpc.ServiceError;
      expect(g.code).toBe(grpc.status.INTERNAL);
      expect(g.details).toBe('internal error');
      // A domain error is the caller's answer, not a fault of ours: nothing is captured.
      const d = (await failure(h.connect().echo({ failCode: 'NOT_FOUND' }))) as ConnectError;
      expect(d.code).toBe(Code.NotFound);
    } finally {
      await h.close();
      // The lifecycle's stop closes the tracker, which flushes what is pending.
      await lifecycle.stop();
      await host.close();
    }
    expect(host.envelopes).toHaveLength(1);
    const event = host.envelopes[0]!.items.find((i) => i.header.type === 'event')!.payload;
    const exception = (event.exception as Exceptions).values[0]!;
    expect(exception.type).toBe('Error');
    expect(exception.value).toContain('password authentication failed');
    expect(event.environment).toBe('test');
  });

  it('without a DSN nothing is captured twice: the server gets no hook (the RPC layer logs the cause)', async () => {
    const lifecycle = new ServiceLifecycle(silentLogger());
    const monitoring = await startServiceMonitoring(lifecycle, {
      collector: new NoopMetricsCollector(),
      logger: silentLogger(),
      errorTracking: { dsn: '' },
      environment: 'test',
    });
    expect(monitoring.tracker.active).toBe(false);
    expect(monitoring.onUnexpectedError).toBeUndefined();
    await lifecycle.stop();
  });

  it('a hook that throws is logged and the caller still gets INTERNAL', async () => {
    const h = await startEchoServer({
      onUnexpectedError: () => {
        throw new Error('tracker broken');
      },
    });
    try {
      const c = (await failure(h.connect().echo({ failCode: 'BOOM' }))) as ConnectError;
      expect(c.code).toBe(Code.Internal);
      expect(c.rawMessage).toBe('internal error');
    } finally {
      await h.close();
    }
  });
});
