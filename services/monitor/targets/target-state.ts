/**
 * The state of one watched target and the rule that moves it: up after a successful probe, down
 * after {@link FAILURES_BEFORE_DOWN} failed probes in a row. Only a change between up and down is a
 * transition (what raises an alert), so a target that fails once and then answers again raises
 * nothing, and a target that stays down raises nothing more.
 */
import type { ProbeOutcome } from './probes';

/** Failed probes in a row that make a target down. */
export const FAILURES_BEFORE_DOWN = 2;

/**
 * What the status page, the health checks and `/metrics` read of a target.
 */
export interface TargetState {
  name: string;
  grpcAddress: string | null;
  httpUrl: string | null;
  /** null until the state is known: no probe finished yet, or only one failed so far. */
  up: boolean | null;
  lastProbeAt: Date | null;
  lastLatencyMs: number | null;
  consecutiveFailures: number;
  /** Error type or short reason only (e.g. "NOT_SERVING", "HTTP 503", "timeout"), never a stack. */
  lastError: string | null;
  /** When `up` last changed (unknown to up or down, up to down, down to up); null before. */
  lastChangeAt: Date | null;
  /** When `lastError` happened (issue 29: shown as past once the target is up again); absent or null when not known. */
  lastErrorAt?: Date | null;
}

/** What is kept of a target's state across restarts and replicas (the rest comes from its config). */
export type StoredTargetState = Pick<
  TargetState,
  | 'up'
  | 'lastProbeAt'
  | 'lastLatencyMs'
  | 'consecutiveFailures'
  | 'lastError'
  | 'lastChangeAt'
  | 'lastErrorAt'
>;

/** A change of a target's state: `down` (was up or unknown) or `recovered` (was down). */
export type TargetTransition = 'down' | 'recovered';

/** Applies probe outcomes to one target's state. */
export class TargetTracker {
  private state: TargetState;

  constructor(target: { name: string; grpcAddress: string | null; httpUrl: string | null }) {
    this.state = {
      ...target,
      up: null,
      lastProbeAt: null,
      lastLatencyMs: null,
      consecutiveFailures: 0,
      lastError: null,
      lastChangeAt: null,
      lastErrorAt: null,
    };
  }

  /** A copy of the current state. */
  snapshot(): TargetState {
    const s = this.state;
    return {
      ...s,
      lastProbeAt: s.lastProbeAt ? new Date(s.lastProbeAt) : null,
      lastChangeAt: s.lastChangeAt ? new Date(s.lastChangeAt) : null,
      lastErrorAt: s.lastErrorAt ? new Date(s.lastErrorAt) : null,
    };
  }

  /**
   * Takes a kept state (from before a restart, or written by the replica that probed last) in place
   * of the current one; the target's name and addresses stay those of its config. Returns whether
   * anything changed.
   */
  restore(kept: StoredTargetState): boolean {
    const s = this.state;
    const same =
      s.up === kept.up &&
      s.consecutiveFailures === kept.consecutiveFailures &&
      s.lastError === kept.lastError &&
      s.lastLatencyMs === kept.lastLatencyMs &&
      s.lastProbeAt?.getTime() === kept.lastProbeAt?.getTime() &&
      s.lastChangeAt?.getTime() === kept.lastChangeAt?.getTime() &&
      (s.lastErrorAt ?? null)?.getTime() === (kept.lastErrorAt ?? null)?.getTime();
    if (same) return false;
    this.state = {
      ...s,
      up: kept.up,
      lastProbeAt: kept.lastProbeAt ? new Date(kept.lastProbeAt) : null,
      lastLatencyMs: kept.lastLatencyMs,
      consecutiveFailures: kept.consecutiveFailures,
      lastError: kept.lastError,
      lastChangeAt: kept.lastChangeAt ? new Date(kept.lastChangeAt) : null,
      lastErrorAt: kept.lastErrorAt ? new Date(kept.lastErrorAt) : null,
    };
    return true;
  }

  /**
   * Records a finished probe and returns the transition it caused, if any. A first success is not
   * "recovered" (the target was never down); two failures before any success are "down" (a target
   * that is down when the monitor starts is reported).
   */
  record(outcome: ProbeOutcome, at: Date, latencyMs: number): TargetTransition | null {
    const was = this.state.up;
    const failures = outcome.ok ? 0 : this.state.consecutiveFailures + 1;
    let up = was;
    if (outcome.ok) up = true;
    else if (failures >= FAILURES_BEFORE_DOWN) up = false;
    this.state = {
      ...this.state,
      up,
      lastProbeAt: at,
      lastLatencyMs: latencyMs,
      consecutiveFailures: failures,
      // The last failure's reason stays visible after a recovery until the next failure replaces it.
      lastError: outcome.ok ? this.state.lastError : outcome.reason,
      lastErrorAt: outcome.ok ? (this.state.lastErrorAt ?? null) : at,
      lastChangeAt: up !== was ? at : this.state.lastChangeAt,
    };
    if (up === false && was !== false) return 'down';
    if (up === true && was === false) return 'recovered';
    return null;
  }
}
