/**
 * A trace crosses a real gRPC call into the real notification process: the process starts the
 * OpenTelemetry SDK (tracing.exporter otlp, gzip, an auth header) pointed at a local OTLP/HTTP
 * receiver, the test calls it with a `traceparent`, and the server span that arrives belongs to that
 * trace, as a child of the caller's span.
 */
import { gunzipSync } from 'node:zlib';
import { InboxService } from '../../shared/gen/svc/notification/v1/inbox_pb';
import { SpanContext } from '../../shared/monitoring/tracing/span-context';
import { grpcClient, unary } from '../support/grpc-clients';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';
import { listen, type TestServer } from '../shared/monitoring/helpers';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
}
interface OtlpRequest {
  resourceSpans: {
    resource: { attributes: { key: string; value: { stringValue?: string } }[] };
    scopeSpans: { spans: OtlpSpan[] }[];
  }[];
}
interface Received {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  spans: (OtlpSpan & { service: string })[];
}

/** A local OTLP/HTTP trace receiver: decodes (gzip) JSON export requests and answers 200. */
async function otlpReceiver(): Promise<{ server: TestServer; received: Received[] }> {
  const received: Received[] = [];
  const server = await listen((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      const parsed = JSON.parse(body.toString('utf8')) as OtlpRequest;
      const spans = parsed.resourceSpans.flatMap((rs) => {
        const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
        return rs.scopeSpans.flatMap((ss) => ss.spans.map((s) => ({ ...s, service })));
      });
      received.push({ path: req.url ?? '', headers: req.headers, spans });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return { server, received };
}

async function waitFor<T>(probe: () => T | undefined, what: string, ms = 20_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const found = probe();
    if (found !== undefined) return found;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const CALLER = new SpanContext('5bf92f3577b34da6a3ce929d0e0e4737', '10f067aa0ba902b8', 1);

describe('a trace across a real gRPC call into the notification process', () => {
  let receiver: { server: TestServer; received: Received[] };
  let proc: ServiceProcess;

  beforeAll(async () => {
    receiver = await otlpReceiver();
    proc = await startServiceProcess('notification', {
      SVC_NOTIFICATION__INBOX__STORE_BACKEND: 'memory',
      SVC_NOTIFICATION__DELIVERY__STORE_BACKEND: 'memory',
      SVC_NOTIFICATION__LOG__LEVEL: 'debug',
      SVC_NOTIFICATION__TRACING__EXPORTER: 'otlp',
      SVC_NOTIFICATION__TRACING__SAMPLER_TYPE: 'parent_based',
      SVC_NOTIFICATION__OPENTELEMETRY__ENDPOINT: receiver.server.url,
      SVC_NOTIFICATION__OPENTELEMETRY__HEADERS: JSON.stringify({ 'x-api-key': 'k-123' }),
      SVC_NOTIFICATION__OPENTELEMETRY__COMPRESSION: 'gzip',
      SVC_NOTIFICATION__OPENTELEMETRY__EXPORT_INTERVAL: '0.2',
    });
  });
  afterAll(async () => {
    await proc?.stop();
    await receiver?.server.close();
  });

  it('exports a SERVER span of the call in the caller trace, as a child of the caller span', async () => {
    const client = grpcClient(InboxService, `127.0.0.1:${proc.grpcPort}`);
    try {
      // Any outcome of the call is fine: the span exists for failed calls too.
      await unary(
        client,
        'countUnread',
        { userId: 'u-1' },
        { metadata: { traceparent: CALLER.toTraceparent() } },
      ).catch(() => undefined);
    } finally {
      client.close();
    }
    const span = await waitFor(
      () => receiver.received.flatMap((r) => r.spans).find((s) => s.traceId === CALLER.traceId),
      'the server span',
    );
    expect(span.service).toBe('notification');
    expect(span.kind).toBe(2); // SPAN_KIND_SERVER
    expect(span.parentSpanId).toBe(CALLER.spanId);
    expect(span.name).toMatch(/svc\.notification\.v1\.InboxService\/CountUnread/);
  });

  it('sends to /v1/traces with the configured header, gzip-compressed', () => {
    const request = receiver.received.find((r) => r.spans.some((s) => s.traceId === CALLER.traceId))!;
    expect(request.path).toBe('/v1/traces');
    expect(request.headers['x-api-key']).toBe('k-123');
    expect(request.headers['content-encoding']).toBe('gzip');
  });

  it('writes the trace ids into log lines written inside the call', () => {
    // The process logs every RPC it serves; the line of this call carries the caller trace id.
    const line = proc.logs.find((l) => l.includes(CALLER.traceId));
    expect(line).toBeDefined();
    expect(line!).toMatch(/"span_id":"[0-9a-f]{16}"/);
  });
});
