/**
 * A StatusSource test double for the status page tests, standing in for the targets, slo and alerts
 * areas until they are wired: state is set by the test, and listeners are called the way the areas
 * call them (synchronously, after the state changed).
 */
import { randomUUID } from 'node:crypto';
import type { Alert } from '../../../services/monitor/alerts/alert';
import type {
  SloStatus,
  StatusSource,
  TargetState,
  Unsubscribe,
} from '../../../services/monitor/web/status-source';

/** A target that has not been probed yet. */
export function target(name: string, extra: Partial<TargetState> = {}): TargetState {
  return {
    name,
    grpcAddress: `${name}.internal:50051`,
    httpUrl: null,
    up: null,
    lastProbeAt: null,
    lastLatencyMs: null,
    consecutiveFailures: 0,
    lastError: null,
    lastChangeAt: null,
    ...extra,
  };
}

/** An SLO with figures. */
export function slo(name: string, extra: Partial<SloStatus> = {}): SloStatus {
  return {
    name,
    metric: 'http_request_duration',
    percentile: 0.99,
    thresholdMs: 250,
    windowSeconds: 300,
    tier: 'P1_BUSINESS_HOURS',
    samples: 120,
    measuredMs: 200,
    burnRate: 0.8,
    budgetRemaining: 0.2,
    kind: 'latency',
    ...extra,
  };
}

/** A dispatched alert (what the alerts area delivers). */
export function alert(title: string, extra: Partial<Alert> = {}): Alert {
  return {
    id: randomUUID(),
    alertName: title,
    kind: 'generic',
    title,
    message: `${title}: details`,
    severity: 'high',
    context: {},
    sourceService: 'checkout',
    firedAt: Date.now(),
    ...extra,
  };
}

/** The double. */
export class StatusSourceDouble implements StatusSource {
  private readonly targetStates = new Map<string, TargetState>();
  private sloStatuses: SloStatus[] = [];
  /** Newest first. */
  private readonly alerts: Alert[] = [];
  private readonly targetListeners = new Set<() => void>();
  private readonly alertListeners = new Set<(a: Alert) => void>();

  constructor(init: { targets?: TargetState[]; slos?: SloStatus[]; alerts?: Alert[] } = {}) {
    for (const t of init.targets ?? []) this.targetStates.set(t.name, t);
    this.sloStatuses = init.slos ?? [];
    this.alerts.push(...(init.alerts ?? []));
  }

  /** Listeners the page holds now (it should hold one per channel while streams are open, else none). */
  get listenerCount(): number {
    return this.targetListeners.size + this.alertListeners.size;
  }

  targets(): readonly TargetState[] {
    return [...this.targetStates.values()];
  }

  slos(): readonly SloStatus[] {
    return this.sloStatuses;
  }

  recentAlerts(limit: number): readonly Alert[] {
    return this.alerts.slice(0, limit);
  }

  onTargetChange(listener: () => void): Unsubscribe {
    this.targetListeners.add(listener);
    return () => this.targetListeners.delete(listener);
  }

  onAlert(listener: (a: Alert) => void): Unsubscribe {
    this.alertListeners.add(listener);
    return () => this.alertListeners.delete(listener);
  }

  /** Replaces one target's state and notifies. */
  setTarget(state: TargetState): void {
    this.targetStates.set(state.name, state);
    for (const l of [...this.targetListeners]) l();
  }

  /** Replaces the SLO figures (no notification: the page refreshes them on its period). */
  setSlos(statuses: SloStatus[]): void {
    this.sloStatuses = statuses;
  }

  /** Dispatches an alert: kept as the newest, then delivered to listeners. */
  pushAlert(a: Alert): Alert {
    this.alerts.unshift(a);
    for (const l of [...this.alertListeners]) l(a);
    return a;
  }
}
