/**
 * Issue 13: a span that crosses a real gRPC call between the two service processes keeps its trace
 * id. The monitor process probes the notification process with the standard gRPC health Check inside
 * a CLIENT span "probe target"; both processes export their spans over OTLP/HTTP to a local receiver
 * (the pattern of trace-grpc.test.ts). The notification process's SERVER span of
 * grpc.health.v1.Health/Check must be in the probe's trace, with the probe span among its ancestors.
 */
import { gunzipSync } from 'node:zlib';
import { listen, type TestServer } from '../shared/monitoring/helpers';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  service: string;
}
interface OtlpRequest {
  resourceSpans: {
    resource: { attributes: { key: string; value: { stringValue?: string } }[] };
    scopeSpans: { spans: Omit<OtlpSpan, 'service'>[] }[];
  }[];
}

const SPAN_KIND_SERVER = 2;
const SPAN_KIND_CLIENT = 3;

/** A local OTLP/HTTP (JSON) trace receiver keeping every span with its service name. */
async function otlpReceiver(): Promise<{ server: TestServer; spans: OtlpSpan[] }> {
  const spans: OtlpSpan[] = [];
  const server = await listen((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      const parsed = JSON.parse(body.toString('utf8')) as OtlpRequest;
      for (const rs of parsed.resourceSpans) {
        const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
        for (const ss of rs.scopeSpans) for (const s of ss.spans) spans.push({ ...s, service });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return { server, spans };
}

function tracingEnv(prefix: string, endpoint: string): Record<string, string> {
  return {
    [`${prefix}__TRACING__EXPORTER`]: 'otlp',
    [`${prefix}__TRACING__SAMPLER_TYPE`]: 'parent_based',
    [`${prefix}__OPENTELEMETRY__ENDPOINT`]: endpoint,
    [`${prefix}__OPENTELEMETRY__EXPORT_INTERVAL`]: '0.2',
  };
}

/** The chain of parents of `span` inside its trace (nearest first), as far as the spans arrived. */
function ancestors(span: OtlpSpan, all: OtlpSpan[]): OtlpSpan[] {
  const byId = new Map(all.filter((s) => s.traceId === span.traceId).map((s) => [s.spanId, s]));
  const chain: OtlpSpan[] = [];
  let parent = span.parentSpanId ? byId.get(span.parentSpanId) : undefined;
  while (parent && chain.length < 16) {
    chain.push(parent);
    parent = parent.parentSpanId ? byId.get(parent.parentSpanId) : undefined;
  }
  return chain;
}

describe('a trace across the real gRPC call from the monitor process to the notification process', () => {
  let receiver: { server: TestServer; spans: OtlpSpan[] };
  let notification: ServiceProcess;
  let monitor: ServiceProcess;

  beforeAll(async () => {
    receiver = await otlpReceiver();
    notification = await startServiceProcess('notification', {
      SVC_NOTIFICATION__INBOX__STORE_BACKEND: 'memory',
      SVC_NOTIFICATION__DELIVERY__STORE_BACKEND: 'memory',
      ...tracingEnv('SVC_NOTIFICATION', receiver.server.url),
    });
    monitor = await startServiceProcess('monitor', {
      ...tracingEnv('SVC_MONITOR', receiver.server.url),
      SVC_MONITOR__TARGETS: JSON.stringify([
        { name: 'notification', grpc_address: `127.0.0.1:${notification.grpcPort}`, interval_seconds: 0.2 },
      ]),
    });
  });
  afterAll(async () => {
    await monitor?.stop();
    await notification?.stop();
    await receiver?.server.close();
  });

  it("puts the notification process's Health/Check server span in the probe's trace, under the probe span", async () => {
    const deadline = Date.now() + 60_000;
    let found: { probe: OtlpSpan; server: OtlpSpan; chain: OtlpSpan[] } | undefined;
    while (!found) {
      if (Date.now() > deadline) throw new Error('timed out waiting for a probe trace with both processes');
      const spans = receiver.spans;
      for (const server of spans) {
        if (server.service !== 'notification' || !/grpc\.health\.v1\.Health\/Check/.test(server.name))
          continue;
        const chain = ancestors(server, spans);
        const probe = chain.find((s) => s.service === 'monitor' && s.name === 'probe target');
        if (probe) found = { probe, server, chain };
      }
      if (!found) await new Promise((r) => setTimeout(r, 100));
    }
    const { probe, server, chain } = found;
    expect(server.kind).toBe(SPAN_KIND_SERVER);
    expect(server.traceId).toBe(probe.traceId);
    expect(probe.kind).toBe(SPAN_KIND_CLIENT);
    // The server span's parent is the monitor's gRPC call span, a child of the probe span.
    const callSpan = chain[0]!;
    expect(callSpan.service).toBe('monitor');
    expect(callSpan.kind).toBe(SPAN_KIND_CLIENT);
    expect(callSpan.name).toMatch(/grpc\.health\.v1\.Health\/Check/);
    expect(callSpan.parentSpanId).toBe(probe.spanId);
    // The probe span starts the trace: every probe is a trace of its own.
    expect(probe.parentSpanId ?? '').toBe('');
  });
});
