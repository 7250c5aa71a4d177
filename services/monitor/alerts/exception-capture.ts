/**
 * CaptureException: an exception reported by another service goes through the monitoring library's
 * error tracker (forwarded to the DSN's host when `error_tracking.dsn` is set, only logged otherwise)
 * and is counted on `/metrics` by service and type. The label pairs are capped: a client sending a
 * new type with every call folds into one `other` series instead of growing the registry.
 *
 * Without a DSN nothing is forwarded, and the exception is only noted in the monitor's own log: at
 * most {@link LOG_LIMIT} lines per minute (a client cannot fill the log by calling in a loop; the
 * lines left out are counted in the next one), and without the caller's message or stack, which may
 * carry personal data the monitor has no business keeping.
 */
import { newId } from '../../../shared/runtime/ids';
import { Counter, type Registry } from 'prom-client';
import { InvalidArgumentError } from '../../../shared/errors';
import { checkText, longerThan, type TextRule } from '../../../shared/text/check';
import type { ErrorTrackerProtocol } from '../../../shared/monitoring/errors/error-tracking';
import { type Logger, silentLogger } from '../../../shared/logging/logger';
import { type Clock, inTimeRange, systemClock } from '../../../shared/runtime/clock';

/** Most log lines per minute about exceptions captured while no DSN is set. */
export const LOG_LIMIT = { lines: 20, windowMs: 60_000 } as const;

/** Bounds of one captured exception. */
export const EXCEPTION_LIMITS = {
  typeChars: 256,
  messageChars: 8192,
  stacktraceChars: 65_536,
  sourceServiceChars: 128,
  environmentChars: 64,
  tags: 32,
  /** Sentry's own limits of a tag key and value. */
  tagKeyChars: 32,
  tagValueChars: 200,
} as const;

/** Label value of the series that holds every (service, type) pair beyond the cap. */
export const OTHER_LABEL = 'other';

/** One exception to capture, as the RPC gives it. */
export interface ExceptionInput {
  type: string;
  message?: string;
  stacktrace?: string;
  sourceService?: string;
  environment?: string;
  tags?: Readonly<Record<string, string>>;
  traceId?: string;
  /** When it happened (milliseconds); when it was received by default. */
  occurredAt?: number;
}

/** What CaptureException answers. */
export interface CaptureResult {
  /** 32 lowercase hex characters: the tracker's event id, or ours when nothing was forwarded. */
  eventId: string;
  /** True when the event went to the external error tracker. */
  forwarded: boolean;
}

/**
 * One text of the exception through the one check of a caller's text: at most `max` code points,
 * storable (no NUL, no lone surrogate), and for a one-line name (`controls: 'refuse'`: the type, the
 * service, the environment, a tag) no control characters. The message and the stack are free text.
 */
function check(value: string, field: string, max: number, controls: TextRule['controls'] = 'refuse'): string {
  return checkText(value, field, { max, controls });
}

const TRACE_ID = /^[0-9a-f]{32}$/;

/** Captures exceptions through the tracker and counts them (see the file comment). */
export class ExceptionCapture {
  private readonly counter: Counter<'service' | 'type'>;
  private readonly seen = new Set<string>();
  private logWindowStart = -Infinity;
  private loggedInWindow = 0;
  private notLogged = 0;

  constructor(
    private readonly tracker: ErrorTrackerProtocol,
    registry: Registry,
    /** Most distinct (service, type) pairs counted on their own. */
    private readonly maxSeries: number,
    private readonly logger: Logger = silentLogger(),
    private readonly clock: Clock = systemClock,
  ) {
    this.counter = new Counter({
      name: 'monitor_exceptions_captured_total',
      help: `Exceptions received by CaptureException, by source service and type (at most ${maxSeries} pairs; the rest under "${OTHER_LABEL}")`,
      labelNames: ['service', 'type'],
      registers: [registry],
    });
  }

  /** Checks, captures and counts one exception. */
  capture(input: ExceptionInput): CaptureResult {
    const type = check(input.type.trim(), 'type', EXCEPTION_LIMITS.typeChars);
    if (type === '') throw new InvalidArgumentError('type is required', 'type');
    const message = check(input.message ?? '', 'message', EXCEPTION_LIMITS.messageChars, 'allow');
    const stacktrace = check(input.stacktrace ?? '', 'stacktrace', EXCEPTION_LIMITS.stacktraceChars, 'allow');
    const service =
      check(input.sourceService ?? '', 'source_service', EXCEPTION_LIMITS.sourceServiceChars).trim() ||
      'unknown';
    const environment = check(input.environment ?? '', 'environment', EXCEPTION_LIMITS.environmentChars);
    const traceId = input.traceId ?? '';
    if (traceId !== '' && !TRACE_ID.test(traceId))
      throw new InvalidArgumentError('trace_id must be 32 lowercase hex characters', 'trace_id');
    const tags: Record<string, string> = {};
    const entries = Object.entries(input.tags ?? {});
    if (entries.length > EXCEPTION_LIMITS.tags)
      throw new InvalidArgumentError(`tags has more than ${EXCEPTION_LIMITS.tags} entries`, 'tags');
    for (const [k, v] of entries) {
      if (k === '' || longerThan(k, EXCEPTION_LIMITS.tagKeyChars))
        throw new InvalidArgumentError(
          `tag keys must have 1 to ${EXCEPTION_LIMITS.tagKeyChars} characters`,
          'tags',
        );
      check(k, 'tags', EXCEPTION_LIMITS.tagKeyChars);
      tags[k] = check(v, `tags.${k}`, EXCEPTION_LIMITS.tagValueChars);
    }
    tags.source_service = service;
    if (environment) tags.environment = environment;
    if (traceId) tags.trace_id = traceId;

    // The caller's exception, rebuilt: its name and message as given, its stack text as the stack
    // (the tracker's parser reads frames from it when it is in a format it knows).
    const occurredAt = input.occurredAt;
    // A Timestamp's valid range (0001-01-01 to 9999-12-31): beyond it there is no date to report,
    // and toISOString would throw (found by the fuzzer: an INTERNAL for a caller's bad time).
    if (occurredAt !== undefined && !inTimeRange(occurredAt)) {
      throw new InvalidArgumentError('time is out of range (0001-01-01 to 9999-12-31)', 'time');
    }
    const error = new Error(message);
    error.name = type;
    error.stack = stacktrace || `${type}: ${message}`;
    const extra = occurredAt !== undefined ? { occurred_at: new Date(occurredAt).toISOString() } : {};
    this.count(service, type);
    if (this.tracker.active) {
      const id = this.tracker.captureException(error, { tags, extra });
      if (id) return { eventId: id, forwarded: true };
    }
    const eventId = newId().replace(/-/g, '');
    this.noteLocally({ event_id: eventId, type, source_service: service, trace_id: traceId || undefined });
    return { eventId, forwarded: false };
  }

  /** One log line per exception, within the limit per minute (see the file comment). */
  private noteLocally(fields: Record<string, unknown>): void {
    const now = this.clock.now();
    if (now - this.logWindowStart >= LOG_LIMIT.windowMs) {
      this.logWindowStart = now;
      this.loggedInWindow = 0;
    }
    if (this.loggedInWindow >= LOG_LIMIT.lines) {
      this.notLogged++;
      return;
    }
    this.loggedInWindow++;
    const skipped = this.notLogged;
    this.notLogged = 0;
    this.logger.warn(
      { event: 'exception_captured', ...fields, ...(skipped > 0 ? { not_logged_before: skipped } : {}) },
      'exception captured (no error_tracking.dsn: not forwarded)',
    );
  }

  private count(service: string, type: string): void {
    const pair = `${service}\u0000${type}`;
    if (!this.seen.has(pair)) {
      if (this.seen.size >= this.maxSeries) {
        this.counter.inc({ service: OTHER_LABEL, type: OTHER_LABEL });
        return;
      }
      this.seen.add(pair);
    }
    this.counter.inc({ service, type });
  }
}
