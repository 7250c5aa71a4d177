/**
 * Forwarding of stored spans over OTLP/HTTP (backend_type opentelemetry): a local OTLP/HTTP receiver
 * decodes what the monitor's exporter sends (gzip, headers, batches); an unreachable endpoint never
 * fails ExportSpans and is counted; a full forwarding queue drops and counts.
 */
import { gunzipSync } from 'node:zlib';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import type { MonitorConfigInput } from '../../../services/monitor/config';
import { listen, type TestServer } from '../../shared/monitoring/helpers';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';

interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  service: string;
}

interface Receiver {
  server: TestServer;
  spans: ReceivedSpan[];
  requests: Array<{ path: string; headers: Record<string, string | string[] | undefined> }>;
}

/** A local OTLP/HTTP receiver: decodes (gzip) OTLP JSON export requests and answers 200 `{}`. */
async function otlpReceiver(): Promise<Receiver> {
  const spans: ReceivedSpan[] = [];
  const requests: Receiver['requests'] = [];
  const server = await listen((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      const parsed = JSON.parse(body.toString('utf8')) as {
        resourceSpans: Array<{
          resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
          scopeSpans: Array<{ spans: Omit<ReceivedSpan, 'service'>[] }>;
        }>;
      };
      for (const rs of parsed.resourceSpans) {
        const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
        for (const ss of rs.scopeSpans) for (const s of ss.spans) spans.push({ ...s, service });
      }
      requests.push({ path: req.url ?? '', headers: req.headers });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return { server, spans, requests };
}

async function waitFor(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function counter(base: string, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = new RegExp(`^\\w*${name}\\{${labels}\\} (\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

function span(traceId: string, n: number, parent = '') {
  return {
    traceId,
    spanId: n.toString(16).padStart(16, '0'),
    parentSpanId: parent,
    name: `op-${n}`,
    startTime: timestampFromMs(1_700_000_000_000 + n),
    endTime: timestampFromMs(1_700_000_000_100 + n),
    serviceName: n % 2 ? 'cart' : 'checkout',
  };
}

const running: RunningMonitorApp[] = [];
const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((m) => m.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function start(
  opentelemetry: MonitorConfigInput['opentelemetry'],
  tracing: MonitorConfigInput['tracing'] = {},
) {
  const m = await startMonitorApp({ backend_type: 'opentelemetry', opentelemetry, tracing });
  running.push(m);
  return m;
}

describe('span forwarding', () => {
  it('sends stored spans through the OTLP exporter with the configured headers and gzip', async () => {
    const receiver = await otlpReceiver();
    servers.push(receiver.server);
    const m = await start({
      endpoint: receiver.server.url,
      headers: { 'x-collector-key': 'k-123' },
      compression: 'gzip',
      batch_size: 2,
      export_interval: 0.05,
    });
    const t = 'c'.repeat(32);
    const res = await m.monitorConnect.exportSpans({
      spans: [span(t, 1), span(t, 2, '0000000000000001'), span(t, 3, '0000000000000001')],
    });
    expect(res.accepted).toBe(3);
    await waitFor(() => receiver.spans.length >= 3, 'three forwarded spans');

    const byId = new Map(receiver.spans.map((s) => [s.spanId, s]));
    expect(byId.get('0000000000000001')).toMatchObject({ traceId: t, name: 'op-1', service: 'cart' });
    expect(byId.get('0000000000000002')).toMatchObject({
      parentSpanId: '0000000000000001',
      service: 'checkout',
    });
    expect(receiver.requests[0]).toMatchObject({
      path: '/v1/traces',
      headers: expect.objectContaining({ 'x-collector-key': 'k-123', 'content-encoding': 'gzip' }),
    });
    await waitFor(
      async () => (await counter(m.baseUrl, 'monitor_spans_forwarded_total', 'outcome="ok"')) === 3,
      'ok count',
    );
  });

  it('never fails ExportSpans when the endpoint is unreachable, and counts the failure', async () => {
    // Take a free port and close it again: nothing listens there.
    const closed = await listen(() => undefined);
    await closed.close();
    const m = await start({ endpoint: closed.url, timeout: 1, batch_size: 1, export_interval: 0.05 });
    const t = 'd'.repeat(32);
    const res = await m.monitorConnect.exportSpans({ spans: [span(t, 1)] });
    expect(res).toMatchObject({ accepted: 1, rejected: 0 });
    expect((await m.monitorConnect.getTrace({ traceId: t })).spans).toHaveLength(1);
    await waitFor(
      async () => (await counter(m.baseUrl, 'monitor_spans_forwarded_total', 'outcome="failed"')) === 1,
      'the failed forward to be counted',
    );
  });

  it('drops and counts spans beyond tracing.forward_queue_size', async () => {
    const receiver = await otlpReceiver();
    servers.push(receiver.server);
    // A long interval and a large batch: nothing leaves the queue while the test fills it.
    const m = await start(
      { endpoint: receiver.server.url, batch_size: 100, export_interval: 3600 },
      { forward_queue_size: 2 },
    );
    const t = 'e'.repeat(32);
    const res = await m.monitorConnect.exportSpans({ spans: [1, 2, 3, 4, 5].map((n) => span(t, n)) });
    // Stored all the same: forwarding is best effort.
    expect(res.accepted).toBe(5);
    expect(await counter(m.baseUrl, 'monitor_spans_forwarded_total', 'outcome="dropped"')).toBe(3);
    // At stop, the queued two are flushed.
    await m.close();
    running.length = 0;
    expect(receiver.spans.map((s) => s.spanId).sort()).toEqual(['0000000000000001', '0000000000000002']);
  });
});
