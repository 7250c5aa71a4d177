/**
 * What the status page reads: the shapes of /work/briefs/status-shapes.md, which the targets, slo and
 * alerts areas return structurally (they never import this file), and the one interface the page
 * is built on. app.ts assembles a StatusSource from those areas; until they are wired it uses
 * {@link emptyStatusSource}, so the page works on a bare monitor.
 */
import type { Alert } from '../../../shared/gen/svc/monitor/v1/monitor_pb';

/** One watched target as the targets area reports it (`TargetsArea.states()`). */
export interface TargetState {
  name: string;
  grpcAddress: string | null;
  httpUrl: string | null;
  /** null until the first probe finished. */
  up: boolean | null;
  lastProbeAt: Date | null;
  lastLatencyMs: number | null;
  consecutiveFailures: number;
  /** Error type or short reason only (e.g. "NOT_SERVING", "HTTP 503", "timeout"), never a stack. */
  lastError: string | null;
}

/** One SLO as the slo area reports it now (`SloArea.statuses()`). */
export interface SloStatus {
  name: string;
  metric: string;
  percentile: number;
  thresholdMs: number;
  windowSeconds: number;
  tier: string;
  /** Samples in the window now. */
  samples: number;
  /** Measured value at the percentile over the window; null with no samples. */
  measuredMs: number | null;
  /** measuredMs / thresholdMs; null with no samples. */
  burnRate: number | null;
  /** Fraction of the error budget left (1 = untouched, 0 or less = spent); null with no samples. */
  budgetRemaining: number | null;
}

/** The generated proto message `Alert` (what `AlertHub.recent` returns and `subscribe` delivers). */
export type { Alert };

/** Removes a listener added by one of the `on...` methods. */
export type Unsubscribe = () => void;

/**
 * Everything the status page shows. Reads are synchronous snapshots of in-memory state; the page
 * subscribes once per channel (not once per browser), so the areas' listener caps are never the
 * limit on viewers.
 */
export interface StatusSource {
  /** Every watched target, in a stable order. */
  targets(): readonly TargetState[];
  /** Every registered SLO with its figures now (they change with time, not only on events). */
  slos(): readonly SloStatus[];
  /** The newest `limit` alerts, newest first. */
  recentAlerts(limit: number): readonly Alert[];
  /** Called after any target's state changed; the page then re-reads `targets()`. */
  onTargetChange(listener: () => void): Unsubscribe;
  /** Called with every alert as it is dispatched. */
  onAlert(listener: (alert: Alert) => void): Unsubscribe;
}

/**
 * A StatusSource with no targets, no SLOs and no alerts, which never notifies: the page of a monitor
 * whose targets, slo and alerts areas are not wired into it.
 */
export function emptyStatusSource(): StatusSource {
  const none = (): Unsubscribe => () => undefined;
  return {
    targets: () => [],
    slos: () => [],
    recentAlerts: () => [],
    onTargetChange: none,
    onAlert: none,
  };
}
