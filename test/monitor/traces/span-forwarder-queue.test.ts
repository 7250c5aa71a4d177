/**
 * SpanForwarder.enqueue takes a large batch into a large queue without spreading it into arguments
 * (issue 22: never spread an unbounded array into a call; 200,000 arguments overflow the stack).
 */
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { SpanForwarder } from '../../../services/monitor/traces/span-forwarder';
import type { SpanRecord } from '../../../services/monitor/traces/span';
import { MetricsCollector } from '../../../shared/monitoring';
import { silentLogger } from '../../../shared/logging/logger';

it('when 200,000 spans are enqueued into a queue that has room for them, all are queued and nothing throws', () => {
  const exporter: SpanExporter = { export: () => undefined, shutdown: async () => undefined };
  const forwarder = new SpanForwarder(
    exporter,
    { batchSize: 1_000_000, maxQueue: 1_000_000, intervalMs: 60_000 },
    new MetricsCollector(),
    silentLogger(),
  );
  const spans = Array.from({ length: 200_000 }, () => ({}) as SpanRecord);
  expect(() => forwarder.enqueue(spans)).not.toThrow();
  expect(forwarder.queued).toBe(200_000);
});
