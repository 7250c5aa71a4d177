/**
 * What the status page reads: the one interface the page is built on, made of the areas' own shapes
 * (TargetState of targets/, SloStatus of slo/, the Alert of alerts/). app.ts assembles a
 * StatusSource from those areas; {@link emptyStatusSource} is the page of a monitor with none.
 */
import type { Alert } from '../alerts/alert';
import type { SloStatus } from '../slo/slo-area';
import type { TargetState } from '../targets/target-state';
import type { ScheduleStatus } from '../oncall/schedules';

/** The page's shapes are the areas' own: one home each (targets/ and slo/). */
export type { SloStatus, TargetState };

/** The alerts area's Alert (what `AlertHub.recent` returns and `subscribe` delivers). */
export type { Alert };

/** The on-call area's schedule with who is on call now and next (oncall/schedules.ts). */
export type { ScheduleStatus };

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
  /**
   * Every on-call schedule with who is on call now and who is next (issue 28); changes with time
   * (hand-offs), so the page re-reads it on its refresh period. Absent: no on-call panel data.
   */
  onCall?(): readonly ScheduleStatus[];
}

/**
 * A StatusSource with no targets, no SLOs and no alerts, which never notifies (tests, and a page
 * shown without the areas).
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
