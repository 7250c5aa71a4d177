/**
 * The monitor's SLO area: the monitoring library's SLOMonitor (the one home of the SLO rules) behind
 * the RegisterSlo, ListSlos, RecordSloSamples and EvaluateSlos RPCs, the SLOs of `slo.objectives`
 * registered at start, per-SLO gauges on `/metrics` and the statuses the status page shows. What is
 * checked here is only what remote input needs on top of the library's rules: string sizes, a
 * runbook URL, a window bound, a percentile above 0. See README.md for the decisions.
 */
import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from '../../../shared/errors';
import { type Logger, silentLogger } from '../../../shared/logging/logger';
import type { AlertDispatcherProtocol } from '../../../shared/monitoring/alerts/dispatcher';
import type { Clock } from '../../../shared/runtime/clock';
import { hasControlCharacters, longerThan } from '../../../shared/text/check';
import { requireStorableText } from '../../../shared/text/cut';
import type { Counter, Gauge } from '../../../shared/monitoring/instruments';
import type { MetricsCollector } from '../../../shared/monitoring/collector';
import { sloMonitorOptions } from '../../../shared/monitoring/slo/config';
import { type SloEventInput, SLOMonitor } from '../../../shared/monitoring/slo/monitor';
import { bucketRanges, type RatioSLOStatus, SummedWindowCounts } from '../../../shared/monitoring/slo/ratio';
import {
  formatPeriod,
  formatWindow,
  periodSpanSeconds,
  periodStartMs,
  type SloPeriod,
} from '../../../shared/monitoring/slo/period';
import {
  buildRatioRule,
  buildRatioSlo,
  checkWirePeriod,
  ratioDefinitionOf,
  type RatioRuleDefinition,
  type RatioSloDefinition,
  sameRatioDefinition,
} from './ratio-definition';
import { SLO, type SLOViolation } from '../../../shared/monitoring/slo/slo';
import type { AlertTier } from '../../../shared/monitoring/alerts/tiers';
import type { RatioObjective, SLOConfig, SLO as SLOConfigEntry } from './config';
import { DuplicateSLOError, SLOLimitExceededError } from '../../../shared/monitoring/errors';
import { MINUTE_BUCKETS_KEPT_MS, type SloStateStore } from './store';
import { MetricSourceRouter } from './metric-source';
import { type BudgetBurnDown, budgetBurnDown } from './budget-history';

/** How often counter-sourced events are written to the store between evaluations. */
const COUNTER_FLUSH_MS = 5000;

/** Longest string of each field a caller may send. */
export const SLO_FIELD_LIMITS = Object.freeze({
  name: 128,
  metric: 256,
  description: 1024,
  owner: 256,
  runbookUrl: 2048,
  tier: 64,
});

/** Longest SLO window: 30 days (older samples are dropped by the per-metric bound long before). */
export const MAX_SLO_WINDOW_SECONDS = 30 * 24 * 3600;

/** Default window when a caller gives none (the config's default too). */
export const DEFAULT_SLO_WINDOW_SECONDS = 300;

/** An SLO as a caller defines it; absent optional fields take the library's defaults. */
export interface SloDefinition {
  name: string;
  metric: string;
  /** Fraction, greater than 0 and at most 1 (0.99 is p99). */
  percentile: number;
  thresholdMs: number;
  /** Default 300. */
  windowSeconds?: number;
  /** Default 1.0. */
  burnRateThreshold?: number;
  description?: string;
  /** One of the library's AlertTier values; default P1_BUSINESS_HOURS. */
  tier?: string;
  owner?: string;
  /** An http(s) URL. */
  runbookUrl?: string;
  /** Error-budget period: the SLO is then alerted by burn-rate rules (issue 31). */
  period?: SloPeriod;
  /** With a period; empty or absent: the workbook's, scaled. */
  rules?: RatioRuleDefinition[];
  /** With a period; default 100. */
  minEvents?: number;
}

/** One violation of an evaluation, and whether its alert was suppressed. */
export interface SloEvaluationResult {
  violation: SLOViolation;
  /** True when dispatch was asked but an alert for the SLO went out within the suppression window. */
  suppressed: boolean;
}

/** What the status page and `/metrics` show of one SLO now. */
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
  /**
   * Fraction of the error budget left: 1 - (share of the window's samples above the threshold) /
   * (1 - percentile); 1 untouched, 0 or less spent; null with no samples (SLOMonitor.latencyStatuses).
   */
  budgetRemaining: number | null;
  /**
   * `latency`: the single-window check above. `ratio` (a ratio SLO, or a latency SLO with a period):
   * the error budget of its period and its burn-rate rules below; `samples` holds its events,
   * `budgetRemaining` the period's budget, `burnRate` the highest short-window burn of its rules.
   */
  kind: 'latency' | 'ratio';
  /** Ratio: the target share of good events, the period ("30d", "calendar month (UTC)"), events. */
  ratio?: {
    target: number;
    period: string;
    events: number;
    badEvents: number;
    rules: Array<{
      name: string;
      severity: string;
      burnRate: number;
      longWindowSeconds: number;
      shortWindowSeconds: number;
      longBurnRate: number;
      shortBurnRate: number;
      firing: boolean;
    }>;
  };
}

/** The `slo` config keys the area reads. */
export type SloAreaConfig = Pick<
  SLOConfig,
  'max_samples_per_metric' | 'suppression_window_seconds' | 'max_slos' | 'objectives'
> &
  Partial<Pick<SLOConfig, 'ratio_objectives'>>;

/** What SloArea is built from. */
export interface SloAreaOptions {
  config: SloAreaConfig;
  /** Where violations go when dispatch is asked (the monitor's AlertHub once merged). */
  alertDispatcher: AlertDispatcherProtocol;
  /** The monitor's collector: per-SLO gauges and the evaluation counters go on its registry. */
  collector?: MetricsCollector;
  logger?: Logger;
  clock?: Clock;
  /**
   * Where SLOs registered by RPC and their samples are kept (the monitor's database, or memory).
   * Without one, the area keeps everything in its SLOMonitor only (the area's own tests).
   */
  store?: SloStateStore;
  /**
   * Resolves the open alert of a dedup key (the AlertHub's `resolve`): called with `slo:<name>` for
   * every SLO within budget at a dispatching evaluation (a no-op where no alert is open).
   */
  resolve?: (dedupKey: string) => Promise<void>;
  /**
   * Whether an alert is open under a dedup key in the alert store the replicas share: a burn stays
   * under the rule whose page is open, whichever replica evaluates (SLOMonitor `isAlertOpen`).
   */
  isAlertOpen?: (dedupKey: string) => Promise<boolean>;
}

/** Checks one text field of a definition against SLO_FIELD_LIMITS (required: present and not blank). */
export function checkSloString(
  field: keyof typeof SLO_FIELD_LIMITS,
  wireName: string,
  value: string | undefined,
  required: boolean,
): void {
  if (value === undefined || value === '') {
    if (required) throw new InvalidArgumentError(`${wireName} is required`, wireName);
    return;
  }
  if (required && value.trim() === '')
    throw new InvalidArgumentError(`${wireName} must not be blank`, wireName);
  // Characters are code points (an emoji is one), as everywhere a caller's text is counted.
  if (longerThan(value, SLO_FIELD_LIMITS[field]))
    throw new InvalidArgumentError(
      `${wireName} must be at most ${SLO_FIELD_LIMITS[field]} characters`,
      wireName,
    );
  // Control characters would garble log lines and the status page; nothing legitimate needs them.
  if (hasControlCharacters(value))
    throw new InvalidArgumentError(`${wireName} must not contain control characters`, wireName);
  // A lone surrogate: the definition's jsonb would refuse it (INTERNAL for the caller's bad input).
  requireStorableText(value, wireName);
}

/** An empty runbook URL is none; any other must be http(s). */
export function checkRunbookUrl(value: string | undefined): void {
  if (value === undefined || value === '') return;
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    throw new InvalidArgumentError('runbook_url must be an http:// or https:// URL', 'runbook_url');
}

/** The text fields every SLO definition has (latency and ratio), against SLO_FIELD_LIMITS. */
export function checkSloTexts(def: {
  name: string;
  description?: string;
  owner?: string;
  tier?: string;
  runbookUrl?: string;
}): void {
  checkSloString('name', 'name', def.name, true);
  checkSloString('description', 'description', def.description, false);
  checkSloString('owner', 'owner', def.owner, false);
  checkSloString('tier', 'tier', def.tier, false);
  checkSloString('runbookUrl', 'runbook_url', def.runbookUrl, false);
  checkRunbookUrl(def.runbookUrl);
}

/**
 * Checks a caller's definition (bounds the library does not know about) and builds the library's
 * SLO, which checks the rest (percentile at most 1, threshold, window, burn rate, tier).
 */
export function buildSlo(def: SloDefinition): SLO {
  checkSloTexts(def);
  checkSloString('metric', 'metric', def.metric, true);
  // The library accepts 0 (the spec's "0.0 to 1.0"), but p0 is the minimum, never an objective, and
  // on the wire 0 is what an unset percentile reads as.
  if (!(def.percentile > 0))
    throw new InvalidArgumentError(
      `percentile must be greater than 0 and at most 1, got ${def.percentile}`,
      'percentile',
    );
  const windowSeconds = def.windowSeconds ?? DEFAULT_SLO_WINDOW_SECONDS;
  if (windowSeconds > MAX_SLO_WINDOW_SECONDS)
    throw new InvalidArgumentError(`window must be at most ${MAX_SLO_WINDOW_SECONDS} s (30 days)`, 'window');
  const period = def.period;
  if (period) checkWirePeriod(period);
  if (!period && ((def.rules?.length ?? 0) > 0 || def.minEvents !== undefined))
    throw new InvalidArgumentError('rules and min_events need a period', 'period');
  if (
    def.minEvents !== undefined &&
    !(Number.isInteger(def.minEvents) && def.minEvents >= 0 && def.minEvents <= 1e9)
  )
    throw new InvalidArgumentError('min_events must be an integer from 0 to 1000000000', 'min_events');
  const rules =
    period && def.rules && def.rules.length > 0
      ? def.rules.map((r, i) => buildRatioRule(r, i, period))
      : undefined;
  return new SLO({
    name: def.name,
    metric: def.metric,
    percentile: def.percentile,
    thresholdMs: def.thresholdMs,
    windowSeconds,
    burnRateThreshold: def.burnRateThreshold,
    description: def.description,
    // Checked by the SLO constructor against the library's tiers.
    tier: def.tier === undefined || def.tier === '' ? undefined : (def.tier as AlertTier),
    owner: def.owner,
    runbookUrl: def.runbookUrl === '' ? undefined : def.runbookUrl,
    period,
    rules,
    minEvents: period ? def.minEvents : undefined,
  });
}

/** A `slo.objectives` entry as a definition. */
export function definitionFromConfig(entry: SLOConfigEntry): SloDefinition {
  return {
    name: entry.name,
    metric: entry.metric,
    percentile: entry.percentile,
    thresholdMs: entry.threshold_ms,
    windowSeconds: entry.window,
    burnRateThreshold: entry.burn_rate_threshold,
    description: entry.description,
    tier: entry.tier,
    owner: entry.owner,
    runbookUrl: entry.runbook_url,
  };
}

/** A `slo.ratio_objectives` entry as a definition. */
export function ratioDefinitionFromConfig(entry: RatioObjective): RatioSloDefinition {
  return {
    name: entry.name,
    target: entry.target,
    period:
      typeof entry.period === 'number'
        ? { kind: 'rolling', seconds: entry.period }
        : { kind: 'calendar_month', timeZone: entry.period.time_zone },
    rules: entry.rules.map((r) => ({
      severity: r.severity,
      longWindowSeconds: r.long_window,
      shortWindowSeconds: r.short_window,
      burnRate: r.burn_rate,
      errorBudgetPercent: r.error_budget_percent,
      ...(r.name ? { name: r.name } : {}),
    })),
    minEvents: entry.min_events,
    metricSource: entry.metric_source,
    description: entry.description,
    tier: entry.tier,
    owner: entry.owner,
    runbookUrl: entry.runbook_url,
  };
}

/** The definition of a built SLO, defaults applied: what a store keeps. */
export function definitionOf(slo: SLO): SloDefinition {
  return {
    name: slo.name,
    metric: slo.metric,
    percentile: slo.percentile,
    thresholdMs: slo.thresholdMs,
    windowSeconds: slo.windowSeconds,
    burnRateThreshold: slo.burnRateThreshold,
    description: slo.description,
    tier: slo.tier,
    owner: slo.owner,
    ...(slo.runbookUrl ? { runbookUrl: slo.runbookUrl } : {}),
    ...(slo.period
      ? {
          period: { ...slo.period },
          rules: slo.rules.map((r) => ({
            severity: r.severity,
            longWindowSeconds: r.longWindowSeconds,
            shortWindowSeconds: r.shortWindowSeconds,
            burnRate: r.burnRate,
            name: r.name!,
          })),
          minEvents: slo.minEvents,
        }
      : {}),
  };
}

/** The SLO area: register, list, record, evaluate, and report. */
export class SloArea {
  /** The library monitor holding the SLOs, samples and suppression state. */
  readonly monitor: SLOMonitor;
  private readonly config: SloAreaConfig;
  private readonly logger: Logger;
  private readonly store: SloStateStore | undefined;
  private readonly configNames: Set<string>;
  /** Stored SLOs whose name a config objective has (warned about once each). */
  private readonly shadowed = new Set<string>();
  private started = false;
  private refreshing: Promise<void> | undefined;
  private lastRefreshStart = 0;
  private readonly resolve?: (dedupKey: string) => Promise<void>;
  private readonly gauges:
    | {
        burnRate: Gauge;
        budget: Gauge;
        samples: Gauge;
        evaluations: Counter;
        alerts: Counter;
        objective: Gauge;
        periodBudget: Gauge;
        periodEvents: Gauge;
        periodBad: Gauge;
        sliError: Gauge;
        ruleBurn: Gauge;
        ruleFiring: Gauge;
      }
    | undefined;
  /** Ratio SLOs as registered (defaults applied), by name. */
  private readonly ratioDefs = new Map<string, RatioSloDefinition>();
  private readonly clock: Clock | undefined;
  /** Ratio SLOs counted from ingested counters: the ingest store's counter listener feeds it (app.ts). */
  readonly counters = new MetricSourceRouter(() => this.now());
  private flushTimer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;

  constructor(options: SloAreaOptions) {
    this.config = options.config;
    this.store = options.store;
    this.configNames = new Set([
      ...options.config.objectives.map((o) => o.name),
      ...(options.config.ratio_objectives ?? []).map((o) => o.name),
    ]);
    this.resolve = options.resolve;
    this.clock = options.clock;
    this.logger = (options.logger ?? silentLogger()).child({ area: 'slo' });
    this.monitor = new SLOMonitor({
      ...sloMonitorOptions(options.config),
      alertDispatcher: options.alertDispatcher,
      logger: this.logger,
      clock: options.clock,
      // With a store, the last alert per SLO is kept there: replicas share the suppression window.
      suppressionLedger: options.store,
      // A rule whose short window no longer burns: its alert (if one is open) is resolved.
      onRulesRecovered: options.resolve
        ? async (keys) => {
            for (const key of keys) {
              try {
                await options.resolve!(key);
              } catch (err) {
                this.logger.warn(
                  { err, dedupKey: key },
                  'could not resolve the alert of a recovered SLO rule',
                );
              }
            }
          }
        : undefined,
      isAlertOpen: options.isAlertOpen,
    });
    const c = options.collector;
    // One series per SLO and gauge: bounded by max_slos, since SLOs are never removed.
    this.gauges = c && {
      burnRate: c.createGauge(
        'slo_burn_rate',
        'Measured percentile over the SLO window divided by its threshold (0 without samples)',
        undefined,
        { labelNames: ['slo'] },
      ),
      budget: c.createGauge(
        'slo_error_budget_remaining',
        'Fraction of the SLO error budget left over its window (1 untouched, 0 or less spent)',
        undefined,
        { labelNames: ['slo'] },
      ),
      samples: c.createGauge('slo_window_samples', 'Latency samples inside the SLO window', undefined, {
        labelNames: ['slo'],
      }),
      evaluations: c.createCounter('slo_evaluations', 'SLO evaluations run', undefined, {
        labelNames: [],
      }),
      alerts: c.createCounter(
        'slo_alerts',
        'SLO violation alerts by outcome (sent, suppressed, failed)',
        undefined,
        { labelNames: ['outcome'] },
      ),
      // Ratio SLOs, named as Sloth's and Pyrra's recording rules name them (README "Gauges").
      objective: c.createGauge('slo_objective_ratio', 'Target share of good events', undefined, {
        labelNames: ['slo'],
      }),
      periodBudget: c.createGauge(
        'slo_period_error_budget_remaining_ratio',
        'Share of the period error budget left (1 untouched, 0 spent, negative overspent)',
        undefined,
        { labelNames: ['slo'] },
      ),
      periodEvents: c.createGauge('slo_period_events', 'Events in the period so far', undefined, {
        labelNames: ['slo'],
      }),
      periodBad: c.createGauge('slo_period_bad_events', 'Bad events in the period so far', undefined, {
        labelNames: ['slo'],
      }),
      sliError: c.createGauge('slo_sli_error_ratio', 'Share of bad events over a rule window', undefined, {
        labelNames: ['slo', 'window'],
      }),
      ruleBurn: c.createGauge(
        'slo_rule_burn_rate',
        'Burn rate of a rule window: bad share over (1 - target)',
        undefined,
        { labelNames: ['slo', 'rule', 'window'] },
      ),
      ruleFiring: c.createGauge('slo_rule_firing', '1 while a burn-rate rule fires', undefined, {
        labelNames: ['slo', 'rule', 'severity'],
      }),
    };
  }

  /**
   * Registers the SLOs of `slo.objectives`. An invalid objective (an unknown tier, say) throws, so
   * the service does not start with an SLO silently missing. Runs once.
   */
  start(): Promise<void> | void {
    if (this.started) return;
    this.registerObjectives();
    this.flushTimer = setInterval(() => {
      this.flushCounterEvents().catch((err: unknown) =>
        this.logger.warn({ err }, 'counted SLO events could not be written; kept for the next flush'),
      );
    }, COUNTER_FLUSH_MS);
    this.flushTimer.unref();
    // With a store, the SLOs registered by RPC (before a restart, or on another replica) and their
    // recent samples are loaded before the ports open.
    if (this.store) return this.refresh();
  }

  private registerObjectives(): void {
    this.config.objectives.forEach((entry, i) => {
      try {
        this.register(definitionFromConfig(entry));
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        throw new InvalidArgumentError(`slo.objectives[${i}] (${entry.name}): ${reason}`);
      }
    });
    (this.config.ratio_objectives ?? []).forEach((entry, i) => {
      try {
        this.registerRatio(ratioDefinitionFromConfig(entry));
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        throw new InvalidArgumentError(`slo.ratio_objectives[${i}] (${entry.name}): ${reason}`);
      }
    });
    this.started = true;
    this.refreshGauges();
    this.logger.info(
      {
        objectives: this.config.objectives.length,
        ratioObjectives: this.config.ratio_objectives?.length ?? 0,
      },
      'SLO objectives registered',
    );
  }

  /**
   * Registers an SLO: InvalidArgumentError or InvalidSLOError for bad input, DuplicateSLOError for
   * a name taken, SLOLimitExceededError beyond `slo.max_slos`. Returns it with defaults applied.
   */
  register(def: SloDefinition): SLO {
    const slo = buildSlo(def);
    this.monitor.register(slo);
    this.gauges?.samples.set(0, { slo: slo.name });
    this.gauges?.burnRate.set(0, { slo: slo.name });
    this.gauges?.budget.set(1, { slo: slo.name });
    return slo;
  }

  /** Waits for a refresh the status page started, so none is left running when the pool closes. */
  async stop(): Promise<void> {
    if (this.flushTimer) clearInterval(this.flushTimer);
    this.flushTimer = undefined;
    await this.refreshing;
    await this.flushCounterEvents().catch((err: unknown) =>
      this.logger.warn({ err }, 'counted SLO events could not be written at stop'),
    );
  }

  /**
   * Writes the events counted from ingested counters since the last flush to the store (one write
   * per SLO); a failed write puts them back for the next flush. Without a store they are recorded
   * in the monitor directly.
   */
  async flushCounterEvents(): Promise<void> {
    if (this.flushing) return this.flushing;
    const pending = this.counters.take();
    if (pending.size === 0) return;
    const write = async () => {
      const left = new Map(pending);
      for (const [slo, buckets] of pending) {
        const events = [...buckets].map(([atMs, c]) => ({ atMs, good: c.good, total: c.total }));
        if (!this.store) {
          for (const e of events) this.monitor.recordCounterEvents(slo, e.atMs, e.good, e.total);
        } else {
          try {
            await this.store.addSloEvents(slo, events);
          } catch (err) {
            // This SLO's events and those not written yet wait for the next flush.
            this.counters.putBack(left);
            throw err;
          }
        }
        left.delete(slo);
      }
    };
    this.flushing = write().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  /**
   * RegisterSlo: checks the definition, then keeps it in the store (so it survives a restart and
   * every replica sees it) and registers it here. A name taken here, in the config or by another
   * replica is DuplicateSLOError; beyond `slo.max_slos` SLOLimitExceededError.
   */
  async registerSlo(def: SloDefinition): Promise<SLO> {
    if (!this.store) return this.register(def);
    const slo = buildSlo(def);
    await this.refreshDefinitions();
    if (this.monitor.registeredSlos.has(slo.name) || this.monitor.registeredRatioSlos.has(slo.name))
      throw new DuplicateSLOError(`SLO ${JSON.stringify(slo.name)} is already registered`);
    if (this.monitor.sloCount >= this.config.max_slos)
      throw new SLOLimitExceededError(`at most ${this.config.max_slos} SLOs may be registered`);
    const stored = definitionOf(slo);
    if (!(await this.store.addSlo(stored)))
      throw new DuplicateSLOError(`SLO ${JSON.stringify(slo.name)} is already registered`);
    return this.register(stored);
  }

  /**
   * Registers a ratio SLO here (config objectives, loaded definitions): InvalidArgumentError for bad
   * input, DuplicateSLOError for a name taken. Returns the definition with defaults applied.
   */
  registerRatio(def: RatioSloDefinition): RatioSloDefinition {
    const slo = buildRatioSlo(def);
    this.monitor.registerRatio(slo);
    const registered = ratioDefinitionOf(slo, def.metricSource);
    this.ratioDefs.set(slo.name, registered);
    if (def.metricSource) this.counters.set(slo.name, def.metricSource);
    return registered;
  }

  /**
   * RegisterRatioSlo: checks the definition, keeps it in the store and registers it. The same
   * definition again is no change (services register theirs at every start); another one under a
   * taken name (latency or ratio) is DuplicateSLOError; beyond `slo.max_slos`, SLOLimitExceededError.
   */
  async registerRatioSlo(def: RatioSloDefinition): Promise<RatioSloDefinition> {
    const wanted = ratioDefinitionOf(buildRatioSlo(def), def.metricSource);
    await this.refreshDefinitions();
    const taken = (): RatioSloDefinition => {
      const existing = this.ratioDefs.get(wanted.name);
      if (existing && sameRatioDefinition(existing, wanted)) return existing;
      throw new DuplicateSLOError(`SLO ${JSON.stringify(wanted.name)} is already registered`);
    };
    if (this.monitor.registeredSlos.has(wanted.name) || this.ratioDefs.has(wanted.name)) return taken();
    if (this.monitor.sloCount >= this.config.max_slos)
      throw new SLOLimitExceededError(`at most ${this.config.max_slos} SLOs may be registered`);
    if (this.store && !(await this.store.addRatioSlo(wanted))) {
      // Another replica registered the name first: the same definition is fine.
      await this.refreshDefinitions();
      return taken();
    }
    return this.registerRatio(wanted);
  }

  /**
   * RecordSloSamples with `slo` and `events`: all or nothing (the library checks each entry and names
   * the first bad index). NotFoundError for an SLO no replica registered, FailedPreconditionError for
   * a latency SLO (its samples go by metric). Returns the number of events kept.
   */
  async recordEvents(name: string, events: readonly SloEventInput[]): Promise<number> {
    checkSloString('name', 'slo', name, true);
    if (!this.ratioDefs.has(name)) await this.refreshDefinitions();
    if (!this.ratioDefs.has(name)) {
      if (this.monitor.registeredSlos.has(name))
        throw new FailedPreconditionError(
          `SLO ${JSON.stringify(name)} is a latency SLO: record its samples by metric (metric, values_ms)`,
        );
      throw new NotFoundError(`no ratio SLO is named ${JSON.stringify(name)}`);
    }
    if (this.counters.has(name))
      throw new FailedPreconditionError(
        `SLO ${JSON.stringify(name)} counts its events from ingested counters (metric_source)`,
      );
    if (!this.store) return Math.max(0, this.monitor.recordEventBatch(name, events));
    this.monitor.checkEventBatch(name, events);
    const now = this.now();
    await this.store.addSloEvents(
      name,
      events.map((e) => ({ atMs: e.atMs ?? now, good: e.good, total: e.good + e.bad })),
    );
    return events.reduce((n, e) => n + e.good + e.bad, 0);
  }

  /**
   * Issue 29: the error-budget burn-down of a ratio SLO (or a latency SLO with a period) over its
   * current period, from the store's hour buckets (budget-history.ts). null: no SLO has the name;
   * FailedPreconditionError: a latency SLO without a period (it has no period budget) or no store.
   */
  async budgetHistory(name: string): Promise<BudgetBurnDown | null> {
    // Registered on another replica: not known here before a refresh.
    if (!this.monitor.registeredRatioSlos.has(name) && !this.monitor.registeredSlos.has(name))
      await this.refreshDefinitions();
    const slo = this.monitor.registeredRatioSlos.get(name);
    if (!slo) {
      if (!this.monitor.registeredSlos.has(name)) return null;
      throw new FailedPreconditionError(`SLO ${JSON.stringify(name)} has no error-budget period`);
    }
    if (!this.store) throw new FailedPreconditionError('SLO events are not stored');
    const nowMs = this.now();
    const startMs = periodStartMs(slo.period, nowMs);
    return budgetBurnDown({
      slo: name,
      period: slo.period,
      objective: slo.objective,
      nowMs,
      buckets: await this.store.sloHourBuckets(name, startMs, nowMs),
    });
  }

  /** Every ratio SLO as registered (defaults applied), by name. */
  listRatio(): RatioSloDefinition[] {
    return [...this.ratioDefs.values()].sort((a, b) => compare(a.name, b.name));
  }

  /** Every ratio SLO's period budget and rules now (from what the last refresh loaded), by name. */
  ratioStatuses(): RatioSLOStatus[] {
    return this.monitor.evaluateRatios().sort((a, b) => compare(a.slo.name, b.slo.name));
  }

  private now(): number {
    return this.clock ? this.clock.now() : Date.now();
  }

  /** ListSlos: every SLO (config and stored, whichever replica registered it), by name. */
  async listSlos(): Promise<SLO[]> {
    await this.refreshDefinitions();
    return this.list();
  }

  /**
   * RecordSloSamples: `recordSamples`, and the kept samples go to the store (bounded there by
   * `slo.max_samples_per_metric` and purged past the longest window of the SLOs that read them).
   */
  async record(metric: string, valuesMs: ArrayLike<number>): Promise<number> {
    if (!this.store) return this.recordSamples(metric, valuesMs);
    checkSloString('metric', 'metric', metric, true);
    // An SLO registered on another replica may read it.
    if (!this.readsMetric(metric)) await this.refreshDefinitions();
    const accepted = this.recordSamples(metric, valuesMs);
    if (accepted > 0) {
      await this.store.addSamples(metric, valuesMs, this.config.max_samples_per_metric);
      // Latency SLOs with a period count the samples as events, in the store every replica reads.
      const now = this.now();
      for (const e of this.monitor.latencyEvents(metric, valuesMs))
        await this.store.addSloEvents(e.name, [{ atMs: now, good: e.good, total: e.total }]);
    }
    return accepted;
  }

  /** EvaluateSlos and the worker: `evaluate` over what the store holds now (every replica's samples). */
  async evaluateNow(dispatch: boolean): Promise<SloEvaluationResult[]> {
    await this.refresh();
    return this.evaluate(dispatch);
  }

  /**
   * Loads the stored SLOs not known here and the samples of every SLO's window from the store (no-op
   * without one), then refreshes the gauges. The status page reads what the last refresh loaded.
   */
  async refresh(): Promise<void> {
    if (!this.store) return;
    await this.refreshDefinitions();
    await this.flushCounterEvents();
    await this.loadRatioCounts(this.store);
    for (const [metric, windowSeconds] of this.windows()) {
      const { valuesMs, agesMs } = await this.store.windowSamples(
        metric,
        windowSeconds,
        this.config.max_samples_per_metric,
      );
      this.monitor.replaceSamples(metric, valuesMs, agesMs);
    }
    this.refreshGauges();
  }

  /**
   * Starts a refresh unless one is running or one started within the last second: the status page
   * reads `statuses()` synchronously and sees the other replicas' samples from its next read on.
   */
  refreshSoon(): void {
    const now = Date.now();
    if (!this.store || this.refreshing || now - this.lastRefreshStart < 1000) return;
    this.lastRefreshStart = now;
    this.refreshing = this.refresh()
      .catch((err: unknown) => this.logger.warn({ err }, 'SLO refresh failed'))
      .finally(() => (this.refreshing = undefined));
  }

  /** Loads every ratio SLO's window sums from the store into the monitor, in one read. */
  private async loadRatioCounts(store: SloStateStore): Promise<void> {
    const now = this.now();
    const ranges = new Map<string, ReturnType<typeof bucketRanges>>();
    for (const slo of this.monitor.registeredRatioSlos.values()) ranges.set(slo.name, bucketRanges(slo, now));
    if (ranges.size === 0) return;
    const sums = await store.sloEventSums(ranges);
    for (const [name, s] of sums) this.monitor.setRatioCounts(name, new SummedWindowCounts(s));
  }

  /**
   * Deletes stored samples past the longest window of the SLOs reading their metric, and event
   * buckets past what any window or period reads; returns how many rows.
   */
  async purge(): Promise<number> {
    if (!this.store) return 0;
    await this.refreshDefinitions();
    const now = this.now();
    const hours = new Map<string, number>();
    for (const slo of this.monitor.registeredRatioSlos.values())
      hours.set(slo.name, now - (periodSpanSeconds(slo.period) + 3600) * 1000);
    return (
      (await this.store.purgeSamples(this.windows())) +
      (await this.store.purgeSloEvents(now - MINUTE_BUCKETS_KEPT_MS, hours))
    );
  }

  /** Each metric some SLO reads, with the longest window of those SLOs (seconds). */
  private windows(): Map<string, number> {
    const out = new Map<string, number>();
    for (const slo of this.monitor.registeredSlos.values())
      out.set(slo.metric, Math.max(out.get(slo.metric) ?? 0, slo.windowSeconds));
    return out;
  }

  private readsMetric(metric: string): boolean {
    for (const slo of this.monitor.registeredSlos.values()) if (slo.metric === metric) return true;
    return false;
  }

  /**
   * Registers here the stored SLOs not known yet. A stored SLO whose name a config objective has is
   * not loaded: the config wins (warned once); the stored row is kept, unchanged.
   */
  private async refreshDefinitions(): Promise<void> {
    if (!this.store) return;
    for (const def of await this.store.listRatioSlos()) {
      if (this.ratioDefs.has(def.name) || this.monitor.registeredSlos.has(def.name)) continue;
      try {
        this.registerRatio(def);
      } catch (err) {
        if (!this.shadowed.has(def.name)) {
          this.shadowed.add(def.name);
          this.logger.warn({ err, slo: def.name }, 'a stored ratio SLO could not be loaded');
        }
      }
    }
    for (const def of await this.store.listSlos()) {
      if (this.monitor.registeredSlos.has(def.name)) {
        if (this.configNames.has(def.name) && !this.shadowed.has(def.name)) {
          this.shadowed.add(def.name);
          this.logger.warn(
            { slo: def.name },
            'an SLO registered by RPC has the name of a config objective: the config objective is used',
          );
        }
        continue;
      }
      try {
        this.register(def);
      } catch (err) {
        // Over max_slos (lowered since it was stored), or a rule tightened since: skipped, said once.
        if (!this.shadowed.has(def.name)) {
          this.shadowed.add(def.name);
          this.logger.warn({ err, slo: def.name }, 'a stored SLO could not be loaded');
        }
      }
    }
  }

  /** Every SLO, by name. */
  list(): SLO[] {
    return [...this.monitor.registeredSlos.values()].sort((a, b) => compare(a.name, b.name));
  }

  /**
   * Records latency samples (ms) of `metric`, all or nothing (the library names the first bad
   * index). Returns how many were kept: 0 when no SLO reads the metric.
   */
  recordSamples(metric: string, valuesMs: ArrayLike<number>): number {
    checkSloString('metric', 'metric', metric, true);
    return this.monitor.recordSamples(metric, valuesMs);
  }

  /**
   * Evaluates every SLO now. With `dispatch`, each violation goes to the alert dispatcher unless an
   * alert for the same SLO went out within `slo.suppression_window_seconds` (then `suppressed`).
   */
  async evaluate(dispatch: boolean): Promise<SloEvaluationResult[]> {
    let results: SloEvaluationResult[];
    if (dispatch) {
      const outcomes = await this.monitor.evaluateAndDispatchWithOutcomes();
      for (const o of outcomes) this.gauges?.alerts.increment(1, { outcome: o.outcome });
      results = outcomes.map((o) => ({ violation: o.violation, suppressed: o.outcome === 'suppressed' }));
      await this.resolveRecovered(new Set(results.map((r) => r.violation.slo.name)));
    } else {
      results = this.monitor.evaluate().map((violation) => ({ violation, suppressed: false }));
    }
    this.gauges?.evaluations.increment();
    this.refreshGauges();
    return results;
  }

  /**
   * Resolves the alert of every SLO not violated at this dispatching evaluation (`slo:<name>`; a
   * no-op where none is open). Asked of every SLO rather than remembered, so a restart or another
   * replica's evaluation still closes an alert opened before.
   */
  private async resolveRecovered(violated: Set<string>): Promise<void> {
    if (!this.resolve) return;
    for (const slo of this.list()) {
      if (violated.has(slo.name)) continue;
      try {
        await this.resolve(`slo:${slo.name}`);
      } catch (err) {
        this.logger.warn({ err, slo: slo.name }, 'could not resolve the alert of a recovered SLO');
      }
    }
  }

  /** The state of every SLO now, by name; also refreshes the per-SLO gauges. */
  statuses(): SloStatus[] {
    const out = this.monitor.latencyStatuses().map((s): SloStatus => ({
      name: s.slo.name,
      metric: s.slo.metric,
      percentile: s.slo.percentile,
      thresholdMs: s.slo.thresholdMs,
      windowSeconds: s.slo.windowSeconds,
      tier: s.slo.tier,
      samples: s.samples,
      measuredMs: s.measuredMs,
      burnRate: s.burnRate,
      budgetRemaining: s.errorBudgetRemaining,
      kind: 'latency',
    }));
    this.publish(out);
    for (const r of this.monitor.evaluateRatios()) out.push(ratioPageStatus(r));
    return out.sort((a, b) => compare(a.name, b.name));
  }

  private refreshGauges(): void {
    if (!this.gauges) return;
    this.statuses();
    this.publishRatio(this.monitor.evaluateRatios());
  }

  private publishRatio(statuses: readonly RatioSLOStatus[]): void {
    const g = this.gauges;
    if (!g) return;
    for (const s of statuses) {
      const slo = s.slo.name;
      g.objective.set(s.slo.objective, { slo });
      g.periodBudget.set(s.errorBudgetRemaining, { slo });
      g.periodEvents.set(s.events, { slo });
      g.periodBad.set(s.badEvents, { slo });
      for (const r of s.rules) {
        const budget = s.slo.errorBudget;
        g.sliError.set(r.longBurnRate * budget, { slo, window: formatWindow(r.rule.longWindowSeconds) });
        g.sliError.set(r.shortBurnRate * budget, { slo, window: formatWindow(r.rule.shortWindowSeconds) });
        g.ruleBurn.set(r.longBurnRate, { slo, rule: r.name, window: 'long' });
        g.ruleBurn.set(r.shortBurnRate, { slo, rule: r.name, window: 'short' });
        g.ruleFiring.set(r.firing ? 1 : 0, { slo, rule: r.name, severity: r.rule.severity });
      }
    }
  }

  private publish(statuses: readonly SloStatus[]): void {
    const g = this.gauges;
    if (!g) return;
    for (const s of statuses) {
      const labels = { slo: s.name };
      g.samples.set(s.samples, labels);
      // Without samples nothing burns: 0 and a whole budget, rather than a stale figure.
      g.burnRate.set(s.burnRate ?? 0, labels);
      g.budget.set(s.budgetRemaining ?? 1, labels);
    }
  }
}

/** A ratio status as the page shows it. */
function ratioPageStatus(r: RatioSLOStatus): SloStatus {
  return {
    name: r.slo.name,
    metric: '',
    percentile: r.slo.objective,
    thresholdMs: 0,
    windowSeconds: r.slo.windowSeconds,
    tier: r.slo.pageTier,
    samples: r.events,
    measuredMs: null,
    burnRate: r.rules.length === 0 ? null : Math.max(...r.rules.map((x) => x.shortBurnRate)),
    budgetRemaining: r.errorBudgetRemaining,
    kind: 'ratio',
    ratio: {
      target: r.slo.objective,
      period: formatPeriod(r.slo.period),
      events: r.events,
      badEvents: r.badEvents,
      rules: r.rules.map((x) => ({
        name: x.name,
        severity: x.rule.severity,
        burnRate: x.rule.burnRate,
        longWindowSeconds: x.rule.longWindowSeconds,
        shortWindowSeconds: x.rule.shortWindowSeconds,
        longBurnRate: x.longBurnRate,
        shortBurnRate: x.shortBurnRate,
        firing: x.firing,
      })),
    },
  };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
