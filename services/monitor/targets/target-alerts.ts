/**
 * The alerts of watched targets: what a "down" and a "recovered" alert say, and the queue that hands
 * them to the dispatcher one at a time, in order, without ever holding up a probe. The queue is
 * bounded: a dispatcher that hangs (a webhook that never answers) makes the newest alerts be dropped
 * and logged, never memory grow.
 */
import type { Logger } from '../../../shared/logging/logger';
import type { AlertContext, AlertDispatcherProtocol } from '../../../shared/monitoring/alerts/dispatcher';
import type { TargetState, TargetTransition } from './target-state';

/** Alerts waiting for the dispatcher, over all targets, before new ones are dropped. */
export const MAX_PENDING_TARGET_ALERTS = 64;

/** Severity of a "down" alert: high (an ERROR log line, paged). */
export const DOWN_SEVERITY = 'high';
/** Severity of a "recovered" alert: low (a WARNING log line; good news, but it closes a page). */
export const RECOVERED_SEVERITY = 'low';
/**
 * Tier of both alerts: P0_PAGE. A recovery goes the same way as the page it resolves, at once: held
 * until business hours (P1) or a digest (P2), the person paged would not learn it is over.
 */
export const TARGET_ALERT_TIER = 'P0_PAGE';

/** One alert of a target, as handed to `AlertDispatcherProtocol.sendAlert`. */
export interface TargetAlert {
  title: string;
  message: string;
  severity: string;
  context: AlertContext;
  /** On a recovery: the dedup key of the "down" alert it resolves (`target:<name>`). */
  resolves?: string;
}

/** The dedup key of a target's "down" alert. */
export function targetDedupKey(name: string): string {
  return `target:${name}`;
}

/** The alert for `transition` of the target now in `state`. */
export function targetAlert(transition: TargetTransition, state: TargetState): TargetAlert {
  const address = [state.grpcAddress, state.httpUrl].filter((a) => a !== null).join(' ');
  const context: AlertContext = {
    tier: TARGET_ALERT_TIER,
    target: state.name,
    state: transition,
    grpc_address: state.grpcAddress,
    http_url: state.httpUrl,
    consecutive_failures: state.consecutiveFailures,
    last_error: state.lastError,
  };
  if (transition === 'down') {
    return {
      title: `target ${state.name} is down`,
      message: `${state.name} (${address}) failed ${state.consecutiveFailures} probes in a row: ${state.lastError ?? 'unknown'}`,
      severity: DOWN_SEVERITY,
      context: { ...context, dedup_key: targetDedupKey(state.name) },
    };
  }
  return {
    title: `target ${state.name} recovered`,
    message: `${state.name} (${address}) answers its health probe again`,
    severity: RECOVERED_SEVERITY,
    context,
    resolves: targetDedupKey(state.name),
  };
}

/** Sends alerts through a dispatcher one after another, at most {@link MAX_PENDING_TARGET_ALERTS} waiting. */
export class TargetAlertQueue {
  private tail: Promise<void> = Promise.resolve();
  private pending = 0;
  private dropped = 0;

  constructor(
    private readonly dispatcher: AlertDispatcherProtocol,
    private readonly logger: Logger,
    private readonly maxPending = MAX_PENDING_TARGET_ALERTS,
    /**
     * Resolves the open alert of a key (the AlertHub's `resolve`). When set, a recovery resolves the
     * "down" alert (one resolved notification, worded as the "recovered" alert) instead of raising
     * an alert of its own.
     */
    private readonly resolve?: (dedupKey: string, recovered: TargetAlert) => Promise<void>,
  ) {}

  /** Alerts handed in and not yet dispatched (or failed). */
  get size(): number {
    return this.pending;
  }

  /** Alerts dropped because the queue was full. */
  get droppedCount(): number {
    return this.dropped;
  }

  /** Queues `alert`; false (and a log line) when the queue is full and it was dropped. */
  push(alert: TargetAlert): boolean {
    if (this.pending >= this.maxPending) {
      this.dropped++;
      this.logger.error(
        { event: 'target_alert_dropped', alert: alert.title, target: alert.context.target },
        'target alert dropped: the alert dispatcher is not keeping up',
      );
      return false;
    }
    this.pending++;
    this.tail = this.tail
      .then(() =>
        alert.resolves && this.resolve
          ? this.resolve(alert.resolves, alert)
          : this.dispatcher.sendAlert(alert.title, alert.message, alert.severity, alert.context),
      )
      .catch((err: unknown) =>
        this.logger.error({ err, alert: alert.title }, 'target alert could not be dispatched'),
      )
      .finally(() => {
        this.pending--;
      });
    return true;
  }

  /** Resolves when every queued alert was handed on, or after `timeoutMs`, whichever is first. */
  async drain(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    });
    try {
      await Promise.race([this.tail, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
