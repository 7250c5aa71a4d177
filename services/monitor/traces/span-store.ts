/**
 * The span store behind ExportSpans, GetTrace and OTLP traces: spans grouped by trace id, in memory,
 * bounded three ways so memory never grows without bound:
 *
 * - `maxSpans` overall: the oldest stored span is evicted to make room (reason `capacity`);
 * - `maxStoreBytes`, the estimated bytes of all stored spans (each at most `maxSpanBytes`, see
 *   span-rules.ts): the oldest are evicted to make room (reason `bytes`), so spans full of huge lists
 *   cannot exhaust the heap however many arrive;
 * - `ttlSeconds`: spans stored longer ago are evicted (reason `expired`), checked on every add and get;
 * - `maxSpansPerTrace`: a span for a trace that already holds that many is rejected, so one runaway
 *   trace cannot evict everything else.
 *
 * A span whose (trace id, span id) is stored already is rejected as a duplicate (the first copy
 * wins: exporters retry, and a retry must not double a trace). Every eviction and rejection is
 * counted on /metrics.
 */
import type { Counter, Gauge } from '../../../shared/monitoring/instruments';
import type { MetricsCollector } from '../../../shared/monitoring';
import { type SpanLimits, applyLimits } from './span-rules';
import type { SpanInput, SpanRecord } from './span';
import { type Clock, systemClock } from '../../../shared/runtime/clock';

/** Bounds and limits of a {@link SpanStore}. */
export interface SpanStoreOptions extends SpanLimits {
  maxSpans: number;
  /** Estimated bytes of all stored spans together; at least `maxSpanBytes`. */
  maxStoreBytes: number;
  maxSpansPerTrace: number;
  ttlSeconds: number;
  /** The clock whose wall time stamps and expires spans; injectable for tests. */
  clock?: Clock;
}

/** What one `add` did. */
export interface AddResult {
  /** The spans stored (limits applied), in the order given. */
  stored: SpanRecord[];
  /** Spans not stored: duplicates and spans over the per-trace cap. */
  rejected: number;
}

interface Entry {
  traceId: string;
  spanId: string;
  storedAt: number;
  /** The span's estimated size. */
  bytes: number;
}

/** The monitor's bounded span store. */
export class SpanStore {
  private readonly traces = new Map<string, Map<string, SpanRecord>>();
  /** Insertion order (oldest first): eviction by capacity and by age both take from the front. */
  private order: Entry[] = [];
  private head = 0;
  private readonly now: () => number;
  private readonly evicted: Counter;
  private readonly rejectedCounter: Counter;
  private readonly limited: Counter;
  private readonly storedGauge: Gauge;
  private readonly bytesGauge: Gauge;
  private storedBytes = 0;

  constructor(
    private readonly options: SpanStoreOptions,
    metrics: MetricsCollector,
  ) {
    const clock = options.clock ?? systemClock;
    this.now = () => clock.now();
    this.evicted = metrics.createCounter(
      'monitor_spans_evicted',
      'Spans removed from the span store to respect its bounds',
      undefined,
      { labelNames: ['reason'] },
    );
    this.rejectedCounter = metrics.createCounter(
      'monitor_spans_rejected',
      'Valid spans the span store did not keep',
      undefined,
      { labelNames: ['reason'] },
    );
    this.limited = metrics.createCounter(
      'monitor_span_limits_dropped',
      'Attributes, events and links dropped and strings truncated by the tracing limits',
      undefined,
      { labelNames: ['item'] },
    );
    this.storedGauge = metrics.createGauge('monitor_spans_stored', 'Spans held in the span store');
    this.bytesGauge = metrics.createGauge(
      'monitor_span_store_bytes',
      'Estimated bytes of the spans held in the span store (bounded by tracing.max_store_bytes)',
    );
  }

  /** Spans held now. */
  get size(): number {
    return this.order.length - this.head;
  }

  /** Estimated bytes of the spans held now (at most `maxStoreBytes`). */
  get bytes(): number {
    return this.storedBytes;
  }

  /**
   * Stores validated spans (see validateSpans) with the limits applied. Duplicates and spans over
   * the per-trace cap are rejected and counted; the oldest spans make room for new ones.
   */
  add(inputs: readonly SpanInput[]): AddResult {
    const now = this.now();
    this.expire(now);
    const stored: SpanRecord[] = [];
    let rejected = 0;
    const dropped = { attributes: 0, events: 0, links: 0, strings: 0, list_values: 0 };
    for (const input of inputs) {
      let trace = this.traces.get(input.traceId);
      if (trace?.has(input.spanId)) {
        rejected++;
        this.rejectedCounter.record(1, { reason: 'duplicate' });
        continue;
      }
      if (trace && trace.size >= this.options.maxSpansPerTrace) {
        rejected++;
        this.rejectedCounter.record(1, { reason: 'trace_full' });
        continue;
      }
      const limited = applyLimits(input, this.options);
      dropped.attributes += limited.dropped.attributes;
      dropped.events += limited.dropped.events;
      dropped.links += limited.dropped.links;
      dropped.strings += limited.truncated;
      dropped.list_values += limited.listValuesDropped;
      while (this.size >= this.options.maxSpans) this.evictOldest('capacity');
      while (this.size > 0 && this.storedBytes + limited.bytes > this.options.maxStoreBytes) {
        this.evictOldest('bytes');
      }
      // The eviction may have emptied and removed this trace's map.
      trace = this.traces.get(input.traceId);
      if (!trace) {
        trace = new Map();
        this.traces.set(input.traceId, trace);
      }
      trace.set(input.spanId, limited.span);
      this.order.push({ traceId: input.traceId, spanId: input.spanId, storedAt: now, bytes: limited.bytes });
      this.storedBytes += limited.bytes;
      stored.push(limited.span);
    }
    for (const [item, n] of Object.entries(dropped)) if (n > 0) this.limited.record(n, { item });
    this.recordSize();
    return { stored, rejected };
  }

  /**
   * The stored spans of a trace in start order; empty when none. Clocks often give a parent and its
   * first child the same start (millisecond clocks), so ties go by depth in the trace (a parent
   * before its children), then by span id.
   */
  getTrace(traceId: string): SpanRecord[] {
    this.expire(this.now());
    const trace = this.traces.get(traceId);
    if (!trace) return [];
    const depth = new Map<string, number>();
    for (const span of trace.values()) {
      let d = 0;
      // Bounded by the trace's size: a parent cycle (ids are the caller's) cannot loop forever.
      for (let p = trace.get(span.parentSpanId); p && d < trace.size; p = trace.get(p.parentSpanId)) d++;
      depth.set(span.spanId, d);
    }
    return [...trace.values()].sort((a, b) => {
      if (a.startNs !== b.startNs) return a.startNs < b.startNs ? -1 : 1;
      const byDepth = depth.get(a.spanId)! - depth.get(b.spanId)!;
      return byDepth !== 0 ? byDepth : a.spanId.localeCompare(b.spanId);
    });
  }

  private expire(now: number): void {
    const cutoff = now - this.options.ttlSeconds * 1000;
    let expired = 0;
    while (this.size > 0 && this.order[this.head]!.storedAt <= cutoff) {
      this.removeOldest();
      expired++;
    }
    if (expired > 0) {
      this.evicted.record(expired, { reason: 'expired' });
      this.recordSize();
    }
  }

  private recordSize(): void {
    this.storedGauge.record(this.size);
    this.bytesGauge.record(this.storedBytes);
  }

  private evictOldest(reason: 'capacity' | 'bytes'): void {
    this.removeOldest();
    this.evicted.record(1, { reason });
  }

  private removeOldest(): void {
    const entry = this.order[this.head]!;
    this.head++;
    this.storedBytes -= entry.bytes;
    // Compact the consumed front now and then: amortised O(1), and the array stays bounded.
    if (this.head > 1024 && this.head * 2 > this.order.length) {
      this.order = this.order.slice(this.head);
      this.head = 0;
    }
    const trace = this.traces.get(entry.traceId);
    if (!trace) return;
    trace.delete(entry.spanId);
    if (trace.size === 0) this.traces.delete(entry.traceId);
  }
}
