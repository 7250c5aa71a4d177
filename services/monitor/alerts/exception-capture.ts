/**
 * CaptureException: an exception reported by another service goes through the monitoring library's
 * error tracker (forwarded to the DSN's host when `error_tracking.dsn` is set, only logged otherwise)
 * and is counted on `/metrics` by service and type. The label pairs are capped: a client sending a
 * new type with every call folds into one `other` series instead of growing the registry.
 */
import { randomUUID } from 'node:crypto';
import { Counter, type Registry } from 'prom-client';
import { InvalidArgumentError } from '../../../shared/errors';
import type { ErrorTrackerProtocol } from '../../../shared/monitoring/errors/error-tracking';

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

function check(value: string, field: string, max: number): string {
  if ([...value].length > max)
    throw new InvalidArgumentError(`${field} is longer than ${max} characters`, field);
  return value;
}

const TRACE_ID = /^[0-9a-f]{32}$/;

/** Captures exceptions through the tracker and counts them (see the file comment). */
export class ExceptionCapture {
  private readonly counter: Counter<'service' | 'type'>;
  private readonly seen = new Set<string>();

  constructor(
    private readonly tracker: ErrorTrackerProtocol,
    registry: Registry,
    /** Most distinct (service, type) pairs counted on their own. */
    private readonly maxSeries: number,
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
    const message = check(input.message ?? '', 'message', EXCEPTION_LIMITS.messageChars);
    const stacktrace = check(input.stacktrace ?? '', 'stacktrace', EXCEPTION_LIMITS.stacktraceChars);
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
      if (k === '' || [...k].length > EXCEPTION_LIMITS.tagKeyChars)
        throw new InvalidArgumentError(
          `tag keys must have 1 to ${EXCEPTION_LIMITS.tagKeyChars} characters`,
          'tags',
        );
      tags[k] = check(v, `tags.${k}`, EXCEPTION_LIMITS.tagValueChars);
    }
    tags.source_service = service;
    if (environment) tags.environment = environment;
    if (traceId) tags.trace_id = traceId;

    // The caller's exception, rebuilt: its name and message as given, its stack text as the stack
    // (the tracker's parser reads frames from it when it is in a format it knows).
    const error = new Error(message);
    error.name = type;
    error.stack = stacktrace || `${type}: ${message}`;
    const extra =
      input.occurredAt !== undefined ? { occurred_at: new Date(input.occurredAt).toISOString() } : {};
    const id = this.tracker.captureException(error, { tags, extra });
    this.count(service, type);
    return id && this.tracker.active
      ? { eventId: id, forwarded: true }
      : { eventId: randomUUID().replace(/-/g, ''), forwarded: false };
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
