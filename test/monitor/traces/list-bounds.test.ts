/**
 * List attributes and the bytes of spans are bounded (issue 22): a span with a 500,000-element list
 * comes back from GetTrace cut to `tracing.max_list_length`, over ExportSpans and OTLP alike, and the
 * cut elements are counted on /metrics; a span too big for `tracing.max_span_bytes` loses the
 * attributes that do not fit (counted as dropped attributes, as OpenTelemetry counts them); the
 * store keeps to `tracing.max_store_bytes` however many huge spans arrive.
 */
import { create, toBinary, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { ExportTraceServiceRequestSchema } from '../../../shared/gen/opentelemetry/proto/collector/trace/v1/trace_service_pb';
import type { SpanSchema as OtlpSpanSchema } from '../../../shared/gen/opentelemetry/proto/trace/v1/trace_pb';
import type { SpanSchema } from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';

type SpanInit = MessageInitShape<typeof SpanSchema>;

let seq = 0;
function traceId(): string {
  seq++;
  return seq.toString(16).padStart(32, 'e');
}

function span(trace: string, id: number, attributes: Record<string, unknown>): SpanInit {
  return {
    traceId: trace,
    spanId: id.toString(16).padStart(16, '0'),
    name: `op-${id}`,
    startTime: timestampFromMs(1_700_000_000_000),
    endTime: timestampFromMs(1_700_000_000_050),
    serviceName: 'checkout',
    attributes,
  } as SpanInit;
}

async function metric(monitor: RunningMonitorApp, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${monitor.baseUrl}/metrics`)).text();
  const m = new RegExp(`^${name}${labels ? `\\{${labels}\\}` : ''} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

describe('with the default bounds', () => {
  let monitor: RunningMonitorApp;
  beforeAll(async () => {
    monitor = await startMonitorApp();
  });
  afterAll(() => monitor.close());

  const LIST = 500_000;
  const DEFAULT_MAX_LIST_LENGTH = 128;

  it('ExportSpans: a 500,000-element list comes back from GetTrace cut to max_list_length, the cut counted', async () => {
    const before = await metric(monitor, 'monitor_span_limits_dropped_total', 'item="list_values"');
    const t = traceId();
    // Booleans: two bytes each on the wire, so the request stays under server.max_request_bytes.
    const big = Array.from({ length: LIST }, (_, i) => i % 2 === 0);
    const nested = [Array.from({ length: 1000 }, (_, i) => i), 'x'];
    const res = await monitor.monitorConnect.exportSpans({
      spans: [span(t, 1, { big, nested, small: [1, 2, 3], plain: 'kept' })],
    });
    expect(res).toMatchObject({ accepted: 1, rejected: 0 });

    const [got] = (await monitor.monitorConnect.getTrace({ traceId: t })).spans;
    const attrs = got!.attributes as Record<string, unknown>;
    expect(attrs.big).toEqual(big.slice(0, DEFAULT_MAX_LIST_LENGTH));
    // Lists inside lists are cut too; short lists and other values are untouched.
    expect(attrs.nested).toEqual([Array.from({ length: DEFAULT_MAX_LIST_LENGTH }, (_, i) => i), 'x']);
    expect(attrs.small).toEqual([1, 2, 3]);
    expect(attrs.plain).toBe('kept');

    const after = await metric(monitor, 'monitor_span_limits_dropped_total', 'item="list_values"');
    expect(after - before).toBe(LIST - DEFAULT_MAX_LIST_LENGTH + (1000 - DEFAULT_MAX_LIST_LENGTH));
  });

  it('OTLP/HTTP: the same list is cut the same way', async () => {
    const before = await metric(monitor, 'monitor_span_limits_dropped_total', 'item="list_values"');
    const t = traceId();
    const otlpSpan: MessageInitShape<typeof OtlpSpanSchema> = {
      traceId: Buffer.from(t, 'hex'),
      spanId: Buffer.from('00000000000000a1', 'hex'),
      name: 'otlp-op',
      startTimeUnixNano: 1_700_000_000_000_000_000n,
      endTimeUnixNano: 1_700_000_000_050_000_000n,
      attributes: [
        {
          key: 'big',
          value: {
            value: {
              case: 'arrayValue',
              value: {
                values: Array.from({ length: LIST }, () => ({
                  value: { case: 'boolValue' as const, value: true },
                })),
              },
            },
          },
        },
      ],
    };
    const body = toBinary(
      ExportTraceServiceRequestSchema,
      create(ExportTraceServiceRequestSchema, { resourceSpans: [{ scopeSpans: [{ spans: [otlpSpan] }] }] }),
    );
    const res = await fetch(`${monitor.baseUrl}/v1/traces`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/x-protobuf' },
    });
    expect(res.status).toBe(200);

    const [got] = (await monitor.monitorConnect.getTrace({ traceId: t })).spans;
    expect((got!.attributes as Record<string, unknown>).big).toEqual(
      Array.from({ length: DEFAULT_MAX_LIST_LENGTH }, () => true),
    );
    const after = await metric(monitor, 'monitor_span_limits_dropped_total', 'item="list_values"');
    expect(after - before).toBe(LIST - DEFAULT_MAX_LIST_LENGTH);
  });
});

describe('with small byte bounds', () => {
  let monitor: RunningMonitorApp;
  const MAX_SPAN_BYTES = 64 * 1024;
  const MAX_STORE_BYTES = 1024 * 1024;
  beforeAll(async () => {
    monitor = await startMonitorApp({
      tracing: {
        max_list_length: 100_000,
        max_span_bytes: MAX_SPAN_BYTES,
        max_store_bytes: MAX_STORE_BYTES,
      },
    });
  });
  afterAll(() => monitor.close());

  it('a span over max_span_bytes keeps the attributes that fit, first ones first; the rest are dropped and counted', async () => {
    const before = await metric(monitor, 'monitor_span_limits_dropped_total', 'item="attributes"');
    const t = traceId();
    // Each list is estimated at 3,000 x 16 bytes (a slot and a number): the first fits in 64 KiB,
    // the second and third do not; the small one after them still fits.
    const list = Array.from({ length: 3_000 }, (_, i) => i);
    await monitor.monitorConnect.exportSpans({
      spans: [span(t, 1, { a: list, b: list, c: list, d: 'small' })],
    });
    const [got] = (await monitor.monitorConnect.getTrace({ traceId: t })).spans;
    const attrs = got!.attributes as Record<string, unknown>;
    expect(Object.keys(attrs).sort()).toEqual(['a', 'd']);
    expect(attrs.a).toEqual(list);
    const after = await metric(monitor, 'monitor_span_limits_dropped_total', 'item="attributes"');
    expect(after - before).toBe(2);
  });

  it('many spans with huge lists: the store holds at most max_store_bytes, evicting the oldest (reason "bytes")', async () => {
    const list = Array.from({ length: 3_000 }, (_, i) => i);
    const traces: string[] = [];
    for (let i = 0; i < 100; i++) {
      const t = traceId();
      traces.push(t);
      await monitor.monitorConnect.exportSpans({ spans: [span(t, 1, { list })] });
      expect(await metric(monitor, 'monitor_span_store_bytes')).toBeLessThanOrEqual(MAX_STORE_BYTES);
    }
    expect(await metric(monitor, 'monitor_spans_evicted_total', 'reason="bytes"')).toBeGreaterThan(0);
    // The newest is kept whole, the oldest went.
    const [newest] = (await monitor.monitorConnect.getTrace({ traceId: traces.at(-1)! })).spans;
    expect((newest!.attributes as Record<string, unknown>).list).toEqual(list);
    await expect(monitor.monitorConnect.getTrace({ traceId: traces[0]! })).rejects.toMatchObject({
      rawMessage: expect.stringMatching(/no spans stored/),
    });
  });
});
