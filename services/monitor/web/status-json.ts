/**
 * The JSON the status page and scripts read (`GET /status.json`, the `data:` of the SSE events):
 * snake_case keys like the rest of the HTTP surface, ISO 8601 times, null for "not known yet".
 *
 * Alert texts come from remote callers, so each is cut to a bound here: one alert can never make a
 * snapshot or an event unbounded, whatever the RPC layer accepted.
 */
import type { Alert, ScheduleStatus, SloStatus, TargetState } from './status-source';
import type { OnCallShift } from '../oncall/ports';
import { cutText } from '../../../shared/text/cut';

/** Longest alert title shown, in characters; longer ones end with "…". */
export const MAX_TITLE_CHARS = 300;
/** Longest alert message shown, in characters. */
export const MAX_MESSAGE_CHARS = 2000;
/** Most context entries shown per alert (in key order), and the longest key or value. */
export const MAX_CONTEXT_ENTRIES = 20;
const MAX_CONTEXT_CHARS = 200;

/** One target on the page. */
export interface TargetJson {
  name: string;
  grpc_address: string | null;
  http_url: string | null;
  /** `up`, `down`, or `unknown` before the first probe finished. */
  state: 'up' | 'down' | 'unknown';
  last_probe_at: string | null;
  last_latency_ms: number | null;
  consecutive_failures: number;
  last_error: string | null;
  /** When the state last changed (unknown, up, down); null before. */
  last_change_at: string | null;
  /** When `last_error` happened; null when not known. */
  last_error_at: string | null;
  /**
   * True when `last_error` is past: the target is up again with no failure since (the page shows
   * "last error 12 min ago, recovered", never beside an UP badge as if current).
   */
  last_error_recovered: boolean;
}

/** One SLO on the page. */
export interface SloJson {
  name: string;
  metric: string;
  percentile: number;
  threshold_ms: number;
  window_seconds: number;
  tier: string;
  samples: number;
  measured_ms: number | null;
  burn_rate: number | null;
  budget_remaining: number | null;
  /** `latency` (single window) or `ratio` (error budget over a period, burn-rate rules). */
  kind: 'latency' | 'ratio';
  /** Ratio SLOs: target, period, events and each rule's burn rates and state. */
  ratio?: {
    target: number;
    period: string;
    events: number;
    bad_events: number;
    rules: Array<{
      name: string;
      severity: string;
      burn_rate: number;
      long_window_seconds: number;
      short_window_seconds: number;
      long_burn_rate: number | null;
      short_burn_rate: number | null;
      firing: boolean;
    }>;
  };
}

/** One alert on the page. */
export interface AlertJson {
  id: string;
  alert_name: string;
  /** `generic` (SendAlert), `metric` (SendMetricAlert) or `slo`. */
  kind: 'generic' | 'metric' | 'slo';
  title: string;
  message: string;
  severity: string;
  context: Record<string, string>;
  source_service: string;
  fired_at: string | null;
  /** Lifecycle state (issue 27): `triggered` when raised, `resolved` on its resolution. */
  state: 'triggered' | 'acknowledged' | 'resolved';
}

/** One person's shift on the on-call panel. */
export interface OnCallShiftJson {
  user_id: string;
  start: string;
  end: string;
  /** True when an override put this person on call. */
  override: boolean;
}

/** One schedule on the on-call panel: who is on call now (until `current.end`) and next (from `next.start`). */
export interface OnCallJson {
  schedule: string;
  time_zone: string;
  /** Null when nobody is on call. */
  current: OnCallShiftJson | null;
  /** Null when no shift follows. */
  next: OnCallShiftJson | null;
}

/** Body of `GET /status.json` and `data:` of the `snapshot` event. */
export interface StatusSnapshotJson {
  generated_at: string;
  /** Most alerts a snapshot holds (`web.recent_alerts`); the page keeps as many. */
  alert_limit: number;
  targets: TargetJson[];
  slos: SloJson[];
  /** Newest first. */
  alerts: AlertJson[];
  /** Every on-call schedule in config order (issue 28); also sent alone as the `oncall` event when it changes. */
  oncall: OnCallJson[];
}

/** A target's JSON. */
export function toTargetJson(t: TargetState): TargetJson {
  return {
    name: t.name,
    grpc_address: t.grpcAddress,
    http_url: t.httpUrl,
    state: t.up === null ? 'unknown' : t.up ? 'up' : 'down',
    last_probe_at: isoOrNull(t.lastProbeAt),
    last_latency_ms: finiteOrNull(t.lastLatencyMs),
    consecutive_failures: t.consecutiveFailures,
    last_error: t.lastError === null ? null : cut(t.lastError, MAX_CONTEXT_CHARS),
    last_change_at: isoOrNull(t.lastChangeAt),
    last_error_at: isoOrNull(t.lastErrorAt ?? null),
    last_error_recovered: t.lastError !== null && t.up === true && t.consecutiveFailures === 0,
  };
}

/** An SLO's JSON. */
export function toSloJson(s: SloStatus): SloJson {
  return {
    name: s.name,
    metric: s.metric,
    percentile: s.percentile,
    threshold_ms: s.thresholdMs,
    window_seconds: s.windowSeconds,
    tier: s.tier,
    samples: s.samples,
    measured_ms: finiteOrNull(s.measuredMs),
    burn_rate: finiteOrNull(s.burnRate),
    budget_remaining: finiteOrNull(s.budgetRemaining),
    kind: s.kind,
    ...(s.ratio
      ? {
          ratio: {
            target: s.ratio.target,
            period: s.ratio.period,
            events: s.ratio.events,
            bad_events: s.ratio.badEvents,
            rules: s.ratio.rules.map((r) => ({
              name: r.name,
              severity: r.severity,
              burn_rate: r.burnRate,
              long_window_seconds: r.longWindowSeconds,
              short_window_seconds: r.shortWindowSeconds,
              long_burn_rate: finiteOrNull(r.longBurnRate),
              short_burn_rate: finiteOrNull(r.shortBurnRate),
              firing: r.firing,
            })),
          },
        }
      : {}),
  };
}

/** An alert's JSON, its texts cut to the bounds above. */
export function toAlertJson(a: Alert): AlertJson {
  const context: Record<string, string> = {};
  for (const key of Object.keys(a.context).sort().slice(0, MAX_CONTEXT_ENTRIES)) {
    context[cut(key, MAX_CONTEXT_CHARS)] = cut(a.context[key] ?? '', MAX_CONTEXT_CHARS);
  }
  return {
    id: cut(a.id, 64),
    alert_name: cut(a.alertName, MAX_TITLE_CHARS),
    kind: a.kind,
    title: cut(a.title, MAX_TITLE_CHARS),
    message: cut(a.message, MAX_MESSAGE_CHARS),
    severity: cut(a.severity, 32),
    context,
    source_service: cut(a.sourceService, MAX_CONTEXT_CHARS),
    fired_at: isoOrNull(new Date(a.firedAt)),
    state: a.state ?? 'triggered',
  };
}

/** A schedule's on-call JSON (user ids are bounded by the config already; cut here all the same). */
export function toOnCallJson(s: ScheduleStatus): OnCallJson {
  return {
    schedule: cut(s.name, MAX_CONTEXT_CHARS),
    time_zone: s.timeZone,
    current: toShiftJson(s.current),
    next: toShiftJson(s.next),
  };
}

function toShiftJson(s: OnCallShift | null): OnCallShiftJson | null {
  if (!s) return null;
  return {
    user_id: cut(s.userId, MAX_CONTEXT_CHARS),
    start: s.start.toISOString(),
    end: s.end.toISOString(),
    override: s.override,
  };
}

function cut(text: string, max: number): string {
  return cutText(text, max, { unit: 'code_point', ellipsis: '…' });
}

function finiteOrNull(n: number | null): number | null {
  return n !== null && Number.isFinite(n) ? n : null;
}

function isoOrNull(d: Date | null): string | null {
  return d !== null && !Number.isNaN(d.getTime()) ? d.toISOString() : null;
}

// --- On-call escalation (issue 28, O2b): one open alert's escalation, for `GET /status/escalations.json`
// (web/escalation-routes.ts). Read from the shared escalation store, so any replica shows the same.

/** One page of an escalation: who, at which step, by which channels (or why it failed). */
export interface EscalationPageJson {
  user_id: string;
  /** 1-based, as on the timeline. */
  round: number;
  step: number;
  at: string | null;
  channels: string[];
  /** The notification service's code (`not_found`...) of a page that failed for good; null when sent. */
  error: string | null;
}

/** One open alert's escalation on the page. */
export interface EscalationJson {
  alert_id: string;
  alert_name: string;
  title: string;
  severity: string;
  /** The alert's state: `triggered` or `acknowledged`. */
  alert_state: string;
  policy: string;
  /** `active`, `stopped` (acknowledged, resolved...) or `exhausted` (every step and repeat paged). */
  status: string;
  reason: string;
  /** 1-based current round (a repeat of the list) and step; `steps` and `rounds` their counts (0: policy gone). */
  round: number;
  step: number;
  steps: number;
  rounds: number;
  /** The users the current step paged. */
  targets: string[];
  step_started_at: string | null;
  /** When the next step (or the end) is due while active; null otherwise. */
  next_step_at: string | null;
  /** The position that follows (1-based), or null when the current step is the last of the last round. */
  next: { round: number; step: number } | null;
  /** The pages so far, oldest first (the store keeps the newest 50). */
  pages: EscalationPageJson[];
  acknowledged_by: string | null;
  /** How it was acknowledged: `link`, `sms from +3460****222`, the page's note...; null when not. */
  acknowledged_how: string | null;
}

/** What {@link toEscalationJson} reads (the alerts area's entry and the escalation store's state). */
export interface EscalationViewInput {
  alert: { id: string; alertName: string; title: string; severity: string };
  alertState: string;
  acknowledgedBy: string;
  acknowledgedHow: string;
  state: {
    policy: string;
    status: string;
    reason: string;
    round: number;
    step: number;
    stepStartedAt: number;
    targets: readonly string[];
    pages: ReadonlyArray<{
      userId: string;
      round: number;
      step: number;
      at: number;
      channels: readonly string[];
      error?: string;
    }>;
  };
  /** The policy as configured now (undefined when it was removed). */
  policy?: { steps: ReadonlyArray<{ wait_minutes: number }>; repeat: number };
}

/** An escalation's JSON, its untrusted texts (titles, user ids) cut to the bounds above. */
export function toEscalationJson(v: EscalationViewInput): EscalationJson {
  const s = v.state;
  const steps = v.policy?.steps.length ?? 0;
  const rounds = v.policy ? v.policy.repeat + 1 : 0;
  const wait = v.policy?.steps[s.step]?.wait_minutes;
  const next =
    s.step + 1 < steps
      ? { round: s.round + 1, step: s.step + 2 }
      : s.round + 1 < rounds
        ? { round: s.round + 2, step: 1 }
        : null;
  const user = (u: string) => cut(u, MAX_CONTEXT_CHARS);
  return {
    alert_id: cut(v.alert.id, 64),
    alert_name: cut(v.alert.alertName, MAX_TITLE_CHARS),
    title: cut(v.alert.title, MAX_TITLE_CHARS),
    severity: cut(v.alert.severity, 32),
    alert_state: v.alertState,
    policy: cut(s.policy, MAX_CONTEXT_CHARS),
    status: s.status,
    reason: cut(s.reason, MAX_CONTEXT_CHARS),
    round: s.round + 1,
    step: s.step + 1,
    steps,
    rounds,
    targets: s.targets.slice(0, MAX_CONTEXT_ENTRIES).map(user),
    step_started_at: isoOrNull(new Date(s.stepStartedAt)),
    next_step_at:
      s.status === 'active' && wait !== undefined
        ? isoOrNull(new Date(s.stepStartedAt + wait * 60_000))
        : null,
    next: s.status === 'active' ? next : null,
    pages: s.pages.map((p) => ({
      user_id: user(p.userId),
      round: p.round + 1,
      step: p.step + 1,
      at: isoOrNull(new Date(p.at)),
      channels: [...p.channels],
      error: p.error ?? null,
    })),
    acknowledged_by: v.acknowledgedBy ? user(v.acknowledgedBy) : null,
    acknowledged_how: v.acknowledgedBy ? cut(v.acknowledgedHow, MAX_CONTEXT_CHARS) : null,
  };
}
