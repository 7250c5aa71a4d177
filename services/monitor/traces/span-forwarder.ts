/**
 * Forwards stored spans to an OpenTelemetry collector through the monitoring library's OTLP span
 * exporter (OTLP/HTTP with the `opentelemetry` section's endpoint, headers, compression and timeout).
 *
 * Spans wait in a bounded queue (`tracing.forward_queue_size`; beyond it new spans are dropped and
 * counted) and leave in batches of `opentelemetry.batch_size`, one export at a time, when a batch is
 * full or every `opentelemetry.export_interval`. A failed export is counted and its spans are not
 * retried here (the exporter retries what OTLP calls retryable within its timeout): forwarding never
 * fails or slows the RPC that stored the spans.
 */
import {
  type HrTime,
  type Link,
  SpanKind,
  SpanStatusCode,
  type AttributeValue as OtelValue,
} from '@opentelemetry/api';
import { resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { Logger } from '../../../shared/logging/logger';
import type { MetricsCollector } from '../../../shared/monitoring';
import type { Counter } from '../../../shared/monitoring/instruments';
import type { AttributeValue, Attributes, SpanRecord } from './span';

/** Settings of a {@link SpanForwarder}. */
export interface SpanForwarderOptions {
  /** Spans per export request. */
  batchSize: number;
  /** Spans waiting at most; more are dropped. */
  maxQueue: number;
  /** Time between exports of a partial batch, ms. */
  intervalMs: number;
}

const KIND: Record<SpanRecord['kind'], SpanKind> = {
  internal: SpanKind.INTERNAL,
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
};

const STATUS: Record<SpanRecord['statusCode'], SpanStatusCode> = {
  unset: SpanStatusCode.UNSET,
  ok: SpanStatusCode.OK,
  error: SpanStatusCode.ERROR,
};

const NS_PER_S = 1_000_000_000n;

function hrTime(ns: bigint): HrTime {
  return [Number(ns / NS_PER_S), Number(ns % NS_PER_S)];
}

/** OpenTelemetry attributes are primitives or arrays of them: nested values travel as JSON text. */
function otelValue(v: AttributeValue): OtelValue | undefined {
  if (v === null) return undefined;
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v as string[];
  if (Array.isArray(v) && v.every((x) => typeof x === 'number')) return v as number[];
  if (Array.isArray(v) && v.every((x) => typeof x === 'boolean')) return v as boolean[];
  return JSON.stringify(v);
}

function otelAttributes(a: Attributes): Record<string, OtelValue> {
  const out: Record<string, OtelValue> = {};
  for (const [k, v] of Object.entries(a)) {
    const value = otelValue(v);
    if (value !== undefined) out[k] = value;
  }
  return out;
}

/** The SDK's view of a stored span, as span exporters take it. */
export function toReadableSpan(span: SpanRecord, resource: Resource): ReadableSpan {
  const context = { traceId: span.traceId, spanId: span.spanId, traceFlags: 1 };
  const links: Link[] = span.links.map((l) => ({
    context: { traceId: l.traceId, spanId: l.spanId, traceFlags: 1 },
    attributes: otelAttributes(l.attributes),
  }));
  return {
    name: span.name,
    kind: KIND[span.kind],
    spanContext: () => context,
    ...(span.parentSpanId
      ? { parentSpanContext: { traceId: span.traceId, spanId: span.parentSpanId, traceFlags: 1 } }
      : {}),
    startTime: hrTime(span.startNs),
    endTime: hrTime(span.endNs),
    duration: hrTime(span.endNs - span.startNs),
    status: { code: STATUS[span.statusCode], ...(span.statusMessage ? { message: span.statusMessage } : {}) },
    attributes: otelAttributes(span.attributes),
    links,
    events: span.events.map((e) => ({
      name: e.name,
      time: hrTime(e.timeNs),
      attributes: otelAttributes(e.attributes),
    })),
    ended: true,
    resource,
    instrumentationScope: { name: 'monitor' },
    droppedAttributesCount: span.dropped.attributes,
    droppedEventsCount: span.dropped.events,
    droppedLinksCount: span.dropped.links,
  };
}

/** The bounded forwarding queue in front of a span exporter. */
export class SpanForwarder {
  private queue: SpanRecord[] = [];
  private exporting: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly outcome: Counter;

  constructor(
    private readonly exporter: SpanExporter,
    private readonly options: SpanForwarderOptions,
    metrics: MetricsCollector,
    private readonly logger: Logger,
  ) {
    this.outcome = metrics.createCounter(
      'monitor_spans_forwarded',
      'Spans handed to the OTLP exporter, by outcome (ok, failed, dropped: the queue was full)',
      undefined,
      { labelNames: ['outcome'] },
    );
  }

  /** Spans waiting to be exported. */
  get queued(): number {
    return this.queue.length;
  }

  /** Queues spans for export; those that do not fit are dropped and counted. Never throws. */
  enqueue(spans: readonly SpanRecord[]): void {
    const room = Math.max(0, this.options.maxQueue - this.queue.length);
    const taken = spans.length <= room ? spans : spans.slice(0, room);
    if (taken.length < spans.length) this.outcome.record(spans.length - taken.length, { outcome: 'dropped' });
    for (const span of taken) this.queue.push(span); // never spread: `taken` may be very long
    if (this.queue.length >= this.options.batchSize) this.kick();
  }

  /** Starts the interval that exports partial batches. */
  start(): void {
    this.timer ??= setInterval(() => this.kick(), this.options.intervalMs);
    this.timer.unref();
  }

  /** Exports everything queued (one batch after another); resolves when the queue is empty. */
  async flush(): Promise<void> {
    while (this.exporting || this.queue.length > 0) {
      this.kick();
      await this.exporting;
    }
  }

  /** Stops the interval, exports what is queued, and shuts the exporter down. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
    await this.exporter.shutdown();
  }

  private kick(): void {
    if (this.exporting || this.queue.length === 0) return;
    this.exporting = this.exportLoop().finally(() => {
      this.exporting = undefined;
    });
  }

  private async exportLoop(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.options.batchSize);
      await this.exportBatch(batch);
      // Partial batches wait for the interval, so a trickle still goes out in batches.
      if (this.queue.length < this.options.batchSize) break;
    }
  }

  private exportBatch(batch: SpanRecord[]): Promise<void> {
    // One resource per service in the batch: the exporter groups spans by resource.
    const resources = new Map<string, Resource>();
    const spans = batch.map((s) => {
      let resource = resources.get(s.serviceName);
      if (!resource) {
        resource = resourceFromAttributes({ 'service.name': s.serviceName });
        resources.set(s.serviceName, resource);
      }
      return toReadableSpan(s, resource);
    });
    return new Promise((resolve) => {
      try {
        this.exporter.export(spans, (result) => {
          if (result.code === 0) this.outcome.record(batch.length, { outcome: 'ok' });
          else {
            this.outcome.record(batch.length, { outcome: 'failed' });
            this.logger.warn({ err: result.error, spans: batch.length }, 'span forwarding failed');
          }
          resolve();
        });
      } catch (err) {
        this.outcome.record(batch.length, { outcome: 'failed' });
        this.logger.warn({ err, spans: batch.length }, 'span forwarding failed');
        resolve();
      }
    });
  }
}
