/**
 * ExportSpans and GetTrace against the started monitor, over gRPC (grpc-js) and Connect: what is
 * stored comes back in start order; bad input is INVALID_ARGUMENT naming the span and the reason,
 * with nothing of the request stored; an unknown trace is NOT_FOUND.
 */
import * as grpc from '@grpc/grpc-js';
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@connectrpc/connect';
import {
  ExportSpansRequestSchema,
  type ExportSpansResponse,
  type GetTraceResponse,
  SpanKind,
  type SpanSchema,
  SpanStatusCode,
} from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { unary } from '../../support/grpc-clients';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';

type SpanInit = MessageInitShape<typeof SpanSchema>;

let seq = 0;
function traceId(): string {
  seq++;
  return seq.toString(16).padStart(32, 'f');
}

function span(trace: string, id: string, extra: Record<string, unknown> = {}): SpanInit {
  return {
    traceId: trace,
    spanId: id.padStart(16, '0'),
    name: `op-${id}`,
    startTime: timestampFromMs(1_700_000_000_000),
    endTime: timestampFromMs(1_700_000_000_050),
    serviceName: 'checkout',
    ...extra,
  } as SpanInit;
}

let monitor: RunningMonitorApp;
beforeAll(async () => {
  monitor = await startMonitorApp({ tracing: { max_attributes: 2 } });
});
afterAll(() => monitor.close());

const exportGrpc = (spans: SpanInit[]) =>
  unary<ExportSpansResponse>(monitor.monitorGrpc, 'exportSpans', create(ExportSpansRequestSchema, { spans }));
const getGrpc = (id: string) => unary<GetTraceResponse>(monitor.monitorGrpc, 'getTrace', { traceId: id });

describe('ExportSpans and GetTrace', () => {
  it('over gRPC, stores spans and GetTrace returns them in start order with every field', async () => {
    const t = traceId();
    const root = span(t, '1', {
      startTime: timestampFromMs(1_700_000_000_000),
      endTime: timestampFromMs(1_700_000_000_900),
      kind: SpanKind.SERVER,
      attributes: { 'http.method': 'POST', retries: 2, dropped: true },
      events: [{ name: 'exception', time: timestampFromMs(1_700_000_000_100), attributes: { msg: 'x' } }],
      links: [{ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16) }],
      statusCode: SpanStatusCode.ERROR,
      statusMessage: 'boom',
    });
    const child = span(t, '2', {
      parentSpanId: '1'.padStart(16, '0'),
      startTime: timestampFromMs(1_700_000_000_200),
      endTime: timestampFromMs(1_700_000_000_300),
    });
    const { response } = await exportGrpc([child, root]);
    expect(response).toMatchObject({ accepted: 2, rejected: 0 });

    const got = (await getGrpc(t)).response.spans;
    expect(got.map((s) => s.spanId)).toEqual(['0000000000000001', '0000000000000002']);
    expect(got[0]).toMatchObject({
      traceId: t,
      name: 'op-1',
      parentSpanId: '',
      kind: SpanKind.SERVER,
      statusCode: SpanStatusCode.ERROR,
      statusMessage: 'boom',
      serviceName: 'checkout',
      // tracing.max_attributes is 2: the third attribute is dropped, not refused.
      attributes: { 'http.method': 'POST', retries: 2 },
    });
    expect(got[0]!.events[0]).toMatchObject({ name: 'exception', attributes: { msg: 'x' } });
    expect(got[0]!.links[0]).toMatchObject({ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16) });
    expect(got[0]!.endTime).toEqual(timestampFromMs(1_700_000_000_900));
    expect(got[1]!.parentSpanId).toBe('0000000000000001');
  });

  it('over Connect, a resent span is counted as rejected (duplicate) and stored once', async () => {
    const t = traceId();
    expect(await monitor.monitorConnect.exportSpans({ spans: [span(t, '1')] })).toMatchObject({
      accepted: 1,
      rejected: 0,
    });
    expect(await monitor.monitorConnect.exportSpans({ spans: [span(t, '1'), span(t, '2')] })).toMatchObject({
      accepted: 1,
      rejected: 1,
    });
    const { spans } = await monitor.monitorConnect.getTrace({ traceId: t });
    expect(spans).toHaveLength(2);
  });

  const badSpans: Array<[string, Record<string, unknown>, RegExp]> = [
    ['a short trace id', { traceId: 'abc' }, /spans\[1\]: trace_id must be 32 lowercase hex/],
    ['an upper-case trace id', { traceId: 'A'.repeat(32) }, /spans\[1\]: trace_id/],
    ['an all-zero trace id', { traceId: '0'.repeat(32) }, /spans\[1\]: trace_id .*not all zero/],
    ['an all-zero span id', { spanId: '0'.repeat(16) }, /spans\[1\]: span_id/],
    ['a non-hex span id', { spanId: 'zzzzzzzzzzzzzzzz' }, /spans\[1\]: span_id/],
    ['a bad parent id', { parentSpanId: '123' }, /spans\[1\]: parent_span_id/],
    ['no name', { name: '' }, /spans\[1\]: name is required/],
    ['no start', { startTime: undefined }, /spans\[1\]: start_time is required/],
    ['no end', { endTime: undefined }, /spans\[1\]: end_time is required/],
    [
      'an end before the start',
      { startTime: timestampFromMs(2_000), endTime: timestampFromMs(1_000) },
      /spans\[1\]: end_time is before start_time/,
    ],
    ['a bad link', { links: [{ traceId: 'x', spanId: 'y' }] }, /spans\[1\]: links\[0\]/],
    // Found by a black-box probe: kept, then GetTrace over Connect JSON answered INTERNAL for the trace.
    [
      'an end past 9999-12-31',
      { endTime: { seconds: 10n ** 13n, nanos: 0 } },
      /spans\[1\]: end_time is past 9999-12-31/,
    ],
    [
      'an event past 9999-12-31',
      { events: [{ name: 'late', time: { seconds: 253_402_300_800n, nanos: 0 } }] },
      /spans\[1\]: events\[0\]\.time is past 9999-12-31/,
    ],
  ];

  it.each(badSpans)(
    'refuses %s with INVALID_ARGUMENT naming the span, storing nothing',
    async (_, bad, reason) => {
      const t = traceId();
      const good = span(t, '1');
      const err = (await exportGrpc([good, span(t, '2', bad)]).catch((e: unknown) => e)) as grpc.ServiceError;
      expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err.details).toMatch(reason);
      // Nothing half-applied: the valid first span was not stored either.
      await expect(getGrpc(t)).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
    },
  );

  it('keeps a span ending at the last instant of 9999 and answers it over Connect JSON', async () => {
    const t = traceId();
    const last = { seconds: 253_402_300_799n, nanos: 999_999_999 };
    await monitor.monitorConnect.exportSpans({
      spans: [span(t, '1', { name: '結帳 🛒 تسجيل', endTime: last, events: [{ name: 'e', time: last }] })],
    });
    const res = await fetch(`${monitor.baseUrl}/svc.monitor.v1.MonitorService/GetTrace`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ traceId: t }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { spans: Array<{ name: string; endTime: string }> };
    expect(body.spans[0]).toMatchObject({ name: '結帳 🛒 تسجيل', endTime: '9999-12-31T23:59:59.999999999Z' });
  });

  it('refuses more than 10,000 spans in one request', async () => {
    const t = traceId();
    const spans = Array.from({ length: 10_001 }, (_, i) => span(t, (i + 1).toString(16)));
    const err = await monitor.monitorConnect.exportSpans({ spans }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    expect((err as ConnectError).rawMessage).toMatch(/at most 10000 spans per request/);
  });

  it('GetTrace answers INVALID_ARGUMENT for a malformed trace id and NOT_FOUND for an unknown one', async () => {
    await expect(getGrpc('nope')).rejects.toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: expect.stringMatching(/trace_id/),
    });
    await expect(getGrpc('')).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    await expect(getGrpc(traceId())).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
  });
});
