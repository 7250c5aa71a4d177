/**
 * Ratio SLOs and SLO statuses between the wire (svc.monitor.v1 RatioSlo, SloPeriod, SloAlertRule,
 * SloEvents, SloStatus) and the SLO area's definitions and the library's statuses. proto3 reads an
 * unset scalar as its zero, so a zero means "the default" where the proto says so (burn_rate 0:
 * error_budget_percent; an unset period: rolling 30 days; no rules: the workbook's, scaled).
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import { durationFromMs, durationMs, timestampFromMs, timestampMs } from '@bufbuild/protobuf/wkt';
import {
  type RatioSlo as WireRatioSlo,
  type RatioSloSchema,
  SloCalendarPeriod,
  type SloEvents as WireSloEvents,
  type SloPeriod as WireSloPeriod,
  type SloPeriodSchema,
  type SloStatusSchema,
  type SloAlertRule as WireSloAlertRule,
  type SloAlertRuleSchema,
} from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { InvalidArgumentError } from '../../../shared/errors';
import type { SloEventInput } from '../../../shared/monitoring/slo/monitor';
import type { LatencySLOStatus } from '../../../shared/monitoring/slo/monitor';
import type { RatioSLOStatus } from '../../../shared/monitoring/slo/ratio';
import type { SloPeriod } from '../../../shared/monitoring/slo/period';
import type { RatioRuleDefinition, RatioSloDefinition } from '../slo/ratio-definition';

/** Largest int64 a count may carry here (beyond, doubles lose units). */
const MAX_COUNT = BigInt(Number.MAX_SAFE_INTEGER);

/** A wire period (unset: undefined, the default). */
export function periodFromWire(p: WireSloPeriod | undefined): SloPeriod | undefined {
  if (!p || p.kind.case === undefined) {
    if (p?.timeZone)
      throw new InvalidArgumentError('period.time_zone needs period.calendar', 'period.time_zone');
    return undefined;
  }
  if (p.kind.case === 'rolling') {
    if (p.timeZone)
      throw new InvalidArgumentError('period.time_zone is for a calendar period', 'period.time_zone');
    return { kind: 'rolling', seconds: durationMs(p.kind.value) / 1000 };
  }
  if (p.kind.value !== SloCalendarPeriod.MONTH)
    throw new InvalidArgumentError('period.calendar must be SLO_CALENDAR_PERIOD_MONTH', 'period.calendar');
  return { kind: 'calendar_month', timeZone: p.timeZone === '' ? 'UTC' : p.timeZone };
}

/** A library period on the wire. */
export function periodToWire(p: SloPeriod): MessageInitShape<typeof SloPeriodSchema> {
  return p.kind === 'rolling'
    ? { kind: { case: 'rolling', value: durationFromMs(p.seconds * 1000) } }
    : { kind: { case: 'calendar', value: SloCalendarPeriod.MONTH }, timeZone: p.timeZone };
}

function count(value: bigint, field: string): number {
  if (value < 0n || value > MAX_COUNT)
    throw new InvalidArgumentError(`${field} must be from 0 to ${Number.MAX_SAFE_INTEGER}`, field);
  return Number(value);
}

/** Wire rules as definitions (the area checks them; a zero burn rate means error_budget_percent). */
export function rulesFromWire(rules: readonly WireSloAlertRule[]): RatioRuleDefinition[] {
  return rules.map((r) => ({
    severity: r.severity,
    longWindowSeconds: r.longWindow ? durationMs(r.longWindow) / 1000 : 0,
    shortWindowSeconds: r.shortWindow ? durationMs(r.shortWindow) / 1000 : 0,
    burnRate: r.burnRate,
    errorBudgetPercent: r.errorBudgetPercent,
    ...(r.name ? { name: r.name } : {}),
  }));
}

/** Rules as registered (defaults applied) on the wire. */
export function rulesToWire(
  rules: readonly RatioRuleDefinition[],
): MessageInitShape<typeof SloAlertRuleSchema>[] {
  return rules.map((r) => ({
    severity: r.severity,
    longWindow: durationFromMs(r.longWindowSeconds * 1000),
    shortWindow: durationFromMs(r.shortWindowSeconds * 1000),
    burnRate: r.burnRate ?? 0,
    name: r.name ?? '',
  }));
}

/** An optional int64 count (`min_events`). */
export function optionalCount(value: bigint | undefined, field: string): number | undefined {
  return value === undefined ? undefined : count(value, field);
}

/** RegisterRatioSlo's SLO as a definition (the area checks it). */
export function ratioSloFromWire(w: WireRatioSlo): RatioSloDefinition {
  return {
    name: w.name,
    target: w.target,
    period: periodFromWire(w.period),
    metricSource: w.metricSource
      ? {
          good: {
            metric: w.metricSource.good?.metric ?? '',
            labels: { ...(w.metricSource.good?.labels ?? {}) },
          },
          total: {
            metric: w.metricSource.total?.metric ?? '',
            labels: { ...(w.metricSource.total?.labels ?? {}) },
          },
        }
      : undefined,
    rules: rulesFromWire(w.rules),
    minEvents: w.minEvents === undefined ? undefined : count(w.minEvents, 'min_events'),
    description: w.description,
    tier: w.tier === '' ? undefined : w.tier,
    owner: w.owner,
    runbookUrl: w.runbookUrl === '' ? undefined : w.runbookUrl,
  };
}

/** A registered ratio SLO (defaults applied) on the wire. */
export function ratioSloToWire(d: RatioSloDefinition): MessageInitShape<typeof RatioSloSchema> {
  return {
    name: d.name,
    target: d.target,
    period: d.period ? periodToWire(d.period) : undefined,
    metricSource: d.metricSource,
    rules: rulesToWire(d.rules ?? []),
    minEvents: d.minEvents === undefined ? undefined : BigInt(d.minEvents),
    description: d.description ?? '',
    tier: d.tier ?? '',
    owner: d.owner ?? '',
    runbookUrl: d.runbookUrl ?? '',
  };
}

/** RecordSloSamples' `events` as the library's batch (times in epoch ms; unset: when received). */
export function sloEventsFromWire(events: readonly WireSloEvents[]): SloEventInput[] {
  return events.map((e, i) => ({
    good: count(e.good, `events[${i}].good`),
    bad: count(e.bad, `events[${i}].bad`),
    ...(e.time ? { atMs: timestampMs(e.time) } : {}),
  }));
}

/** A ratio SLO's status on the wire. */
export function ratioStatusToWire(s: RatioSLOStatus): MessageInitShape<typeof SloStatusSchema> {
  return {
    name: s.slo.name,
    kind: s.slo.kind,
    target: s.slo.objective,
    period: periodToWire(s.slo.period),
    periodStart: timestampFromMs(s.periodStartMs),
    events: BigInt(Math.round(s.events)),
    badEvents: BigInt(Math.round(s.badEvents)),
    errorBudgetEvents: s.errorBudgetEvents,
    errorBudgetRemaining: s.errorBudgetRemaining,
    rules: s.rules.map((r) => ({
      rule: {
        severity: r.rule.severity,
        longWindow: durationFromMs(r.rule.longWindowSeconds * 1000),
        shortWindow: durationFromMs(r.rule.shortWindowSeconds * 1000),
        burnRate: r.rule.burnRate,
        name: r.name,
      },
      longBurnRate: r.longBurnRate,
      shortBurnRate: r.shortBurnRate,
      longWindowEvents: BigInt(Math.round(r.longWindowEvents)),
      firing: r.firing,
    })),
  };
}

/**
 * A latency SLO (single window, no period) as a status: its samples in the window are the events,
 * those above the threshold the bad ones; target is the percentile; no period, no rules.
 */
export function latencyStatusToWire(
  s: LatencySLOStatus,
  nowMs: number,
): MessageInitShape<typeof SloStatusSchema> {
  const allowed = s.samples * (1 - s.slo.percentile);
  return {
    name: s.slo.name,
    kind: 'latency',
    target: s.slo.percentile,
    periodStart: timestampFromMs(nowMs - s.slo.windowSeconds * 1000),
    events: BigInt(s.samples),
    badEvents: BigInt(s.samplesAboveThreshold),
    errorBudgetEvents: allowed,
    errorBudgetRemaining: s.errorBudgetRemaining ?? 1,
    rules: [],
  };
}
