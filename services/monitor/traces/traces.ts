/**
 * The traces area: what ExportSpans, GetTrace and the OTLP trace endpoints call. Validates a whole
 * batch before storing any of it, stores it in the {@link SpanStore}, and hands what was stored to
 * the forwarder when one is configured.
 */
import { InvalidArgumentError, NotFoundError } from '../../../shared/errors';
import type { SpanForwarder } from './span-forwarder';
import { isTraceId, validateSpans } from './span-rules';
import type { SpanStore } from './span-store';
import type { SpanInput, SpanRecord } from './span';

/** What an export stored. */
export interface ExportResult {
  /** Spans stored. */
  accepted: number;
  /** Valid spans not stored: duplicates of stored spans, or over the per-trace cap. */
  rejected: number;
}

/** The traces area. */
export class Traces {
  constructor(
    readonly store: SpanStore,
    private readonly forwarder?: SpanForwarder,
  ) {}

  /**
   * Stores a batch of spans. A malformed span makes the whole batch INVALID_ARGUMENT, naming it as
   * `describe(index)` does; nothing is stored then.
   */
  exportSpans(spans: readonly SpanInput[], describe?: (index: number) => string): ExportResult {
    validateSpans(spans, describe);
    const { stored, rejected } = this.store.add(spans);
    if (stored.length > 0) this.forwarder?.enqueue(stored);
    return { accepted: stored.length, rejected };
  }

  /** The spans of a trace in start order; NOT_FOUND when none are stored. */
  getTrace(traceId: string): SpanRecord[] {
    if (!isTraceId(traceId)) {
      throw new InvalidArgumentError(
        'trace_id must be 32 lowercase hex characters, not all zero',
        'trace_id',
      );
    }
    const spans = this.store.getTrace(traceId);
    if (spans.length === 0) throw new NotFoundError(`no spans stored for trace ${traceId}`);
    return spans;
  }
}
