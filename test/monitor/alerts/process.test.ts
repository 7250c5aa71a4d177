/**
 * The alerts area in the started monitor process (node, real ports), configured only from the
 * environment: `SVC_MONITOR__ALERTS__CHANNELS` as a JSON list with a webhook to a local server, and a
 * DSN pointing at a local stand-in host. A grpc-js client watches, sends an alert and captures an
 * exception from outside.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type * as grpc from '@grpc/grpc-js';
import { MonitorService, type Alert } from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { grpcClient, unary, type GenericClient } from '../../support/grpc-clients';
import { startServiceProcess, type ServiceProcess } from '../../support/service-process';
import { waitFor } from '../../support/wait';
import { dsnHost } from '../../shared/monitoring/fixtures/dsn-host';
import { listen, type TestServer } from '../../shared/monitoring/helpers';

const PUBLIC_KEY = 'b1b2c3d4e5f60718293a4b5c6d7e8f90';
const HOOK_SECRET = 'hook-header-secret-0815';

describe('the monitor process with alert channels from the environment', () => {
  let hook: TestServer & { bodies: Array<Record<string, unknown>> };
  let dsn: Awaited<ReturnType<typeof dsnHost>>;
  let proc: ServiceProcess;
  let client: GenericClient;

  beforeAll(async () => {
    const bodies: Array<Record<string, unknown>> = [];
    const server = await listen((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>);
        res.end();
      });
    });
    hook = Object.assign(server, { bodies });
    dsn = await dsnHost();
    proc = await startServiceProcess('monitor', {
      SVC_MONITOR__ALERTS__CHANNELS: JSON.stringify([
        {
          name: 'hook',
          type: 'webhook',
          tiers: ['P0_PAGE'],
          webhook: { url: `${hook.url}/in`, headers: { 'x-token': HOOK_SECRET } },
        },
      ]),
      SVC_MONITOR__ERROR_TRACKING__DSN: `http://${PUBLIC_KEY}@127.0.0.1:${dsn.port}/3`,
    });
    client = grpcClient(MonitorService, `127.0.0.1:${proc.grpcPort}`);
  });
  afterAll(async () => {
    client?.close();
    await proc?.stop();
    await hook?.close();
    await dsn?.close();
  });

  it('streams a SendAlert to a watcher and posts it to the webhook', async () => {
    const call = (client.watchAlerts as (r: unknown) => grpc.ClientReadableStream<{ alert: Alert }>).call(
      client,
      {
        severities: ['critical'],
      },
    );
    const streamed: Alert[] = [];
    call.on('data', (r: { alert: Alert }) => streamed.push(r.alert));
    call.on('error', () => undefined);
    // The watch has no "ready" message: send until one arrives (the first may precede the watch).
    await waitFor(() => {
      if (streamed.length > 0) return true;
      void unary(client, 'sendAlert', {
        title: 'process alert',
        severity: 'critical',
        context: { tier: 'P0_PAGE' },
      });
      return false;
    }, 'the streamed alert');
    call.cancel();
    expect(streamed[0]).toMatchObject({ title: 'process alert', sourceService: 'monitor' });
    await waitFor(() => hook.bodies.some((b) => b.id === streamed[0]!.id), 'the webhook');
  });

  it('forwards CaptureException to the DSN host and counts it on /metrics', async () => {
    const { response } = await unary<{ eventId: string; forwarded: boolean }>(client, 'captureException', {
      type: 'KeyError',
      message: 'order 42',
      sourceService: 'orders',
    });
    expect(response.forwarded).toBe(true);
    await waitFor(() => dsn.envelopes.length > 0, 'the envelope');
    const event = dsn.envelopes[0]!.items.find((i) => i.header.type === 'event')!.payload;
    expect(event.event_id).toBe(response.eventId);
    const metrics = await (await fetch(`http://127.0.0.1:${proc.httpPort}/metrics`)).text();
    expect(metrics).toMatch(
      /^monitor_exceptions_captured_total\{[^}]*service="orders",type="KeyError"[^}]*\} 1$/m,
    );
  });

  it('never writes the webhook header or the DSN key to its log', () => {
    const log = proc.logs.join('\n');
    expect(log).not.toContain(HOOK_SECRET);
    expect(log).not.toContain(PUBLIC_KEY);
  });
});
