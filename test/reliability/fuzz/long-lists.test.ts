/**
 * Long lists (issue 22, "Every list has a bound"), against the real monitor process: spans whose list
 * attributes hold 500,000 elements, sent over ExportSpans one after another. Before the bound, such a
 * span came back whole from GetTrace and a few hundred of them ran the monitor out of heap (fatal,
 * every in-memory state lost). Now each list is cut to `tracing.max_list_length` (128 by default) and
 * the cut counted; the process keeps answering liveness, and what it keeps after a full GC grows by
 * far less than the lists it was sent.
 */
import { randomBytes } from 'node:crypto';

import { MonitorService } from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { grpcClient, unary } from '../../support/grpc-clients';
import { getOnce, inspectorUrl, memoryAfterGc, metricSum } from '../../support/process-probe';
import { startServiceProcess, type ServiceProcess } from '../../support/service-process';
import { atMost, exactly, recordFigures, reported, SOAK } from '../results';

const SPANS = SOAK ? 600 : 60;
const LIST = 500_000;
const MAX_LIST_LENGTH = 128;
const MIB = 1024 * 1024;
/** Sent: SPANS lists of LIST elements (at least 8 bytes each as a JS array); kept: a few MiB at most. */
const HEAP_GROWTH_LIMIT = 64 * MIB;
// A bound against hangs, never a speed check.
const CALL_DEADLINE_MS = 60_000;

let service: ServiceProcess | undefined;
afterAll(async () => {
  await service?.stop('SIGTERM', 10_000);
});

const ts = (ms: number) => ({ seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 });

test(`${SPANS} spans with ${LIST.toLocaleString('en')}-element lists: cut to the bound, counted, the monitor stays up`, async () => {
  service = await startServiceProcess('monitor', {
    // Loopback only, for the full garbage collections before reading memory.
    NODE_OPTIONS: '--inspect=127.0.0.1:0',
  });
  const pid = service.child.pid!;
  const base = `http://127.0.0.1:${service.httpPort}`;
  const metricsUrl = `${base}/metrics`;
  const inspector = inspectorUrl(service.logs);
  const client = grpcClient(MonitorService, `127.0.0.1:${service.grpcPort}`);
  const opts = { deadlineMs: CALL_DEADLINE_MS };

  // Booleans: two bytes each on the wire, so one span stays under server.max_request_bytes.
  const big = Array.from({ length: LIST }, (_, i) => i % 2 === 0);
  const before = await memoryAfterGc(pid, inspector, metricsUrl);
  const droppedBefore = await metricSum(
    metricsUrl,
    'monitor_span_limits_dropped_total',
    'item="list_values"',
  );
  const traceIds: string[] = [];
  let accepted = 0;
  try {
    for (let i = 0; i < SPANS; i++) {
      const traceId = randomBytes(16).toString('hex');
      traceIds.push(traceId);
      const now = Date.now();
      const { response } = await unary<{ accepted: number }>(
        client,
        'exportSpans',
        {
          spans: [
            {
              traceId,
              spanId: randomBytes(8).toString('hex'),
              name: `long-list-${i}`,
              startTime: ts(now - 10),
              endTime: ts(now),
              serviceName: 'long-lists',
              attributes: { big, 'text 💥 مرحبا 你好': ['🙂'.repeat(10)] },
            },
          ],
        },
        opts,
      );
      accepted += response.accepted;
    }
    const live = (JSON.parse(await getOnce(`${base}/health/live`)) as { status: string }).status;
    const after = await memoryAfterGc(pid, inspector, metricsUrl);
    const dropped =
      (await metricSum(metricsUrl, 'monitor_span_limits_dropped_total', 'item="list_values"')) -
      droppedBefore;
    let longest = 0;
    for (const traceId of [traceIds[0]!, traceIds[traceIds.length - 1]!]) {
      const { response } = await unary<{ spans: Array<{ attributes?: Record<string, unknown> }> }>(
        client,
        'getTrace',
        { traceId },
        opts,
      );
      for (const s of response.spans) {
        for (const v of Object.values(s.attributes ?? {}))
          if (Array.isArray(v)) longest = Math.max(longest, v.length);
      }
    }
    const growth = after.heapUsed - before.heapUsed;

    recordFigures({
      section: 'fuzz-long-lists',
      title: `Bad input: ${SPANS} spans with ${LIST.toLocaleString('en')}-element list attributes (monitor process)`,
      kind: 'inputs',
      figures: [
        exactly('spans accepted', accepted, SPANS),
        atMost('longest list GetTrace returned', longest, MAX_LIST_LENGTH),
        exactly('list elements cut and counted', dropped, SPANS * (LIST - MAX_LIST_LENGTH)),
        atMost('V8 heap growth after a full GC (MiB)', Math.round(growth / MIB), HEAP_GROWTH_LIMIT / MIB),
        reported(
          'RSS before / after, after a full GC (MiB)',
          `${Math.round(before.rss / MIB)} / ${Math.round(after.rss / MIB)}`,
        ),
        exactly('/health/live healthy after the lists (1 = yes)', live === 'healthy' ? 1 : 0, 1),
      ],
    });

    expect(accepted).toBe(SPANS);
    expect(longest).toBeGreaterThan(0);
    expect(longest).toBeLessThanOrEqual(MAX_LIST_LENGTH);
    expect(dropped).toBe(SPANS * (LIST - MAX_LIST_LENGTH));
    expect(growth).toBeLessThan(HEAP_GROWTH_LIMIT);
    expect(live).toBe('healthy');
  } finally {
    client.close();
  }
}, 600_000); // a bound against hangs: 100-170 s in CI, over 300 s on a machine at load 10
