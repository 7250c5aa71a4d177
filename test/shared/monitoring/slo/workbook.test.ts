/**
 * Issue 31: the SRE workbook's multiwindow, multi-burn-rate table (chapter "Alerting on SLOs",
 * Table 5-8) checked black-box on SLOMonitor with timestamped events, for every row: page when 1 h
 * and 5 min both burn at 14.4x, page when 6 h and 30 min both burn at 6x, ticket when 3 d and 6 h
 * both burn at 1x; a 99.9% objective over 30 days; at least 100 events in the long window.
 */
import {
  type AlertContext,
  type AlertDispatcherProtocol,
  burnRateFromBudgetPercent,
  defaultBurnRateRules,
  InvalidSLOError,
  MAX_EVENT_ENTRIES_PER_CALL,
  RatioSLO,
  type SloEventInput,
  SLOMonitor,
} from '../../../../shared/monitoring';
import { FakeClock } from '../helpers';

class RecordingDispatcher implements AlertDispatcherProtocol {
  readonly alerts: Array<{ title: string; severity: string; context: AlertContext }> = [];
  async sendAlert(title: string, _m: string, severity: string, context?: AlertContext | null): Promise<void> {
    this.alerts.push({ title, severity, context: context ?? {} });
  }
  async sendMetricAlert(): Promise<void> {}
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** Half a minute into a minute: each event's minute bucket is unambiguous. */
const NOW = Date.UTC(2026, 2, 10, 12, 0, 30);
const NAME = 'checkout-availability';
const PER_MINUTE = 1000;

function setup(
  options: {
    minEvents?: number;
    suppressionWindowSeconds?: number;
    isAlertOpen?: (dedupKey: string) => Promise<boolean>;
    clock?: FakeClock;
    dispatcher?: RecordingDispatcher;
  } = {},
) {
  const clock = options.clock ?? new FakeClock(0, NOW);
  const dispatcher = options.dispatcher ?? new RecordingDispatcher();
  const recovered: string[][] = [];
  const m = new SLOMonitor({
    clock,
    alertDispatcher: dispatcher,
    suppressionWindowSeconds: options.suppressionWindowSeconds ?? 300,
    onRulesRecovered: async (keys) => {
      recovered.push(keys);
    },
    isAlertOpen: options.isAlertOpen,
  });
  m.registerRatio(new RatioSLO({ name: NAME, objective: 0.999, minEvents: options.minEvents }));
  /**
   * One entry a minute for the minutes [fromAgo, toAgo) before now, PER_MINUTE events each, a share
   * `burn` x 0.001 of them bad (burn 14.4: 14.4 bad a minute). Recorded in batches within the bound.
   */
  const burnFor = (fromAgoMin: number, toAgoMin: number, burn: number) => {
    const bad = Math.round(PER_MINUTE * 0.001 * burn * 1000) / 1000;
    const entries: SloEventInput[] = [];
    for (let k = fromAgoMin; k < toAgoMin; k++) {
      // Fractional bad counts are spread: integers only on the wire, so each minute carries
      // floor or ceil of the share, summing to the exact share over the span.
      const before = Math.floor(bad * (k - fromAgoMin));
      const upTo = Math.floor(bad * (k - fromAgoMin + 1));
      const b = upTo - before;
      entries.push({ good: PER_MINUTE - b, bad: b, atMs: clock.now() - k * MINUTE });
    }
    for (let i = 0; i < entries.length; i += MAX_EVENT_ENTRIES_PER_CALL)
      m.recordEventBatch(NAME, entries.slice(i, i + MAX_EVENT_ENTRIES_PER_CALL));
  };
  const rule = (name: string) => m.evaluateRatios()[0]!.rules.find((r) => r.name === name)!;
  return { clock, dispatcher, recovered, m, burnFor, rule };
}

const ROWS = [
  { name: 'page-1h-5m', severity: 'page', rate: 14.4, longMin: 60, shortMin: 5 },
  { name: 'page-6h-30m', severity: 'page', rate: 6, longMin: 360, shortMin: 30 },
  { name: 'ticket-3d-6h', severity: 'ticket', rate: 1, longMin: 3 * 24 * 60, shortMin: 360 },
] as const;

describe.each(ROWS)('workbook row $name ($rate x over $longMin min and $shortMin min)', (row) => {
  test('the default rules are this row, named after its windows', () => {
    const { m } = setup();
    const r = m.registeredRatioSlos.get(NAME)!.rules.find((x) => x.name === row.name)!;
    expect(r).toEqual({
      name: row.name,
      severity: row.severity,
      burnRate: row.rate,
      longWindowSeconds: row.longMin * 60,
      shortWindowSeconds: row.shortMin * 60,
    });
  });

  test('fires just above the rate on both windows, and not just below', () => {
    const above = setup();
    above.burnFor(0, row.longMin, row.rate * 1.02);
    expect(above.rule(row.name)).toMatchObject({ firing: true });
    expect(above.rule(row.name).longBurnRate).toBeCloseTo(row.rate * 1.02, 1);
    const below = setup();
    below.burnFor(0, row.longMin, row.rate * 0.98);
    expect(below.rule(row.name)).toMatchObject({ firing: false });
  });

  test('does not fire on the long window alone once the burn has stopped (short window clean)', () => {
    const { burnFor, rule } = setup();
    burnFor(row.shortMin, row.longMin, row.rate * 1.5);
    burnFor(0, row.shortMin, 0);
    const r = rule(row.name);
    expect(r.longBurnRate).toBeGreaterThan(row.rate);
    expect(r.shortBurnRate).toBe(0);
    expect(r.firing).toBe(false);
  });

  test('does not fire on a short blip (the long window stays below the rate)', () => {
    const { burnFor, rule } = setup();
    burnFor(row.shortMin, row.longMin, 0);
    burnFor(0, row.shortMin, row.rate * (row.longMin / row.shortMin) * 0.5);
    const r = rule(row.name);
    expect(r.shortBurnRate).toBeGreaterThan(row.rate);
    expect(r.longBurnRate).toBeLessThan(row.rate);
    expect(r.firing).toBe(false);
  });

  test('does not fire below the minimum-events guard (99 events), and does at 100', () => {
    const { m, rule, clock } = setup();
    // Every event bad, all inside the short window (so inside the long one too).
    m.recordEventBatch(NAME, [{ good: 0, bad: 99, atMs: clock.now() - MINUTE }]);
    expect(rule(row.name)).toMatchObject({ firing: false, longWindowEvents: 99 });
    m.recordEventBatch(NAME, [{ good: 0, bad: 1, atMs: clock.now() }]);
    expect(rule(row.name)).toMatchObject({ firing: true, longWindowEvents: 100 });
  });

  test('its alert carries the rule dedup key, and is given to onRulesRecovered once the short window recovers', async () => {
    const { m, burnFor, clock, dispatcher, recovered } = setup();
    // Clean traffic before the burn: the slower rules' long windows see a burn diluted as in a
    // service that was healthy before, so only this row's page stays open while it burns.
    burnFor(row.longMin, 4 * row.longMin, 0);
    burnFor(0, row.longMin, row.rate * 1.5);
    await m.evaluateAndDispatch();
    const key = `slo:${NAME}:${row.name}`;
    // 1.5x the row's rate is below every faster rule's rate over its window: this rule alone.
    expect(dispatcher.alerts.map((a) => a.context.dedup_key)).toEqual([key]);
    expect(recovered.flat()).not.toContain(key);
    // The burn stops: clean traffic over the next short window.
    clock.advance(row.shortMin * MINUTE);
    burnFor(0, row.shortMin, 0);
    recovered.length = 0;
    await m.evaluateAndDispatch();
    expect(recovered.flat()).toContain(key);
  });
});

describe('dispatch: one alert per rule, an SLO pages once', () => {
  test('a fast burn trips every rule; one alert goes out, for the first page rule; the others are muted', async () => {
    const { m, burnFor, dispatcher } = setup();
    burnFor(0, 3 * 24 * 60, 30); // 30x for three days: every rule fires
    expect(m.evaluateRatios()[0]!.firing.map((r) => r.name)).toEqual([
      'page-1h-5m',
      'page-6h-30m',
      'ticket-3d-6h',
    ]);
    await m.evaluateAndDispatch();
    expect(dispatcher.alerts).toHaveLength(1);
    expect(dispatcher.alerts[0]).toMatchObject({
      severity: 'critical',
      context: {
        slo: NAME,
        slo_rule: 'page-1h-5m',
        slo_severity: 'page',
        dedup_key: `slo:${NAME}:page-1h-5m`,
        tier: 'P0_PAGE',
        burn_rate_threshold: 14.4,
        long_window_seconds: 3600,
        short_window_seconds: 300,
        period: '30d',
      },
    });
  });

  test('the same rule is suppressed within the window and sent again after it', async () => {
    const { m, burnFor, dispatcher, clock } = setup({ suppressionWindowSeconds: 600 });
    burnFor(0, 60, 20);
    await m.evaluateAndDispatch();
    await m.evaluateAndDispatch();
    expect(dispatcher.alerts).toHaveLength(1);
    clock.advance(601_000);
    burnFor(0, 60, 20);
    await m.evaluateAndDispatch();
    expect(dispatcher.alerts.map((a) => a.context.dedup_key)).toEqual([
      `slo:${NAME}:page-1h-5m`,
      `slo:${NAME}:page-1h-5m`,
    ]);
  });

  test('a burn that moves from the 1 h rule to the 6 h rule stays one page under the first key until no page rule fires', async () => {
    const { m, burnFor, dispatcher, recovered, clock } = setup({ suppressionWindowSeconds: 0 });
    burnFor(0, 360, 20); // 20x for 6 h: both page rules fire
    await m.evaluateAndDispatch();
    // Ten clean minutes: the 5 min window is clean, the 30 min window still burns above 6x.
    clock.advance(10 * MINUTE);
    burnFor(0, 10, 0);
    recovered.length = 0;
    await m.evaluateAndDispatch();
    expect(m.evaluateRatios()[0]!.firing.map((r) => r.name)).toEqual(['page-6h-30m', 'ticket-3d-6h']);
    expect(dispatcher.alerts.map((a) => [a.context.dedup_key, a.context.firing_rules])).toEqual([
      [`slo:${NAME}:page-1h-5m`, 'page-1h-5m,page-6h-30m,ticket-3d-6h'],
      [`slo:${NAME}:page-1h-5m`, 'page-6h-30m,ticket-3d-6h'],
    ]);
    expect(recovered.flat()).not.toContain(`slo:${NAME}:page-1h-5m`);
    // Forty clean minutes: the 30 min window is clean too; no page rule fires; the page recovers.
    clock.advance(30 * MINUTE);
    burnFor(0, 40, 0);
    recovered.length = 0;
    await m.evaluateAndDispatch();
    expect(recovered.flat()).toEqual(
      expect.arrayContaining([`slo:${NAME}:page-1h-5m`, `slo:${NAME}:page-6h-30m`]),
    );
  });

  test('the incident follows the open alert, not the memory of the replica that opened it', async () => {
    // Two replicas, one alert store (a set of open dedup keys: a dispatched alert opens its key).
    const clock = new FakeClock(0, NOW);
    const dispatcher = new RecordingDispatcher();
    const open = new Set<string>();
    const isAlertOpen = async (key: string) => open.has(key);
    const a = setup({ clock, dispatcher, isAlertOpen, suppressionWindowSeconds: 0 });
    const b = setup({ clock, dispatcher, isAlertOpen, suppressionWindowSeconds: 0 });
    // A replica that does not ask the store: the control, which files the burn under its own rule.
    const lonely = setup({ clock, suppressionWindowSeconds: 0 });
    for (const r of [a, b, lonely]) r.burnFor(0, 360, 20); // both page rules fire
    await a.m.evaluateAndDispatch();
    for (const alert of dispatcher.alerts) open.add(alert.context.dedup_key as string);
    expect([...open]).toEqual([`slo:${NAME}:page-1h-5m`]);
    // Ten clean minutes: only the 6 h page rule fires now; replica B evaluates (A's lease moved).
    clock.advance(10 * MINUTE);
    for (const r of [a, b, lonely]) r.burnFor(0, 10, 0);
    await b.m.evaluateAndDispatch();
    await lonely.m.evaluateAndDispatch();
    expect(b.m.evaluateRatios()[0]!.firing.map((r) => r.name)).toEqual(['page-6h-30m', 'ticket-3d-6h']);
    expect(dispatcher.alerts.map((x) => x.context.dedup_key)).toEqual([
      `slo:${NAME}:page-1h-5m`,
      `slo:${NAME}:page-1h-5m`,
    ]);
    expect(b.recovered.flat()).not.toContain(`slo:${NAME}:page-1h-5m`);
    expect(lonely.dispatcher.alerts.map((x) => x.context.dedup_key)).toEqual([`slo:${NAME}:page-6h-30m`]);
    // Once the page is resolved (no alert open), a new burn opens under its own rule.
    open.clear();
    dispatcher.alerts.length = 0;
    await b.m.evaluateAndDispatch();
    expect(dispatcher.alerts.map((x) => x.context.dedup_key)).toEqual([`slo:${NAME}:page-6h-30m`]);
  });

  test('when the alert store cannot be asked, the memory of this monitor decides', async () => {
    const { m, burnFor, dispatcher, clock } = setup({
      suppressionWindowSeconds: 0,
      isAlertOpen: async () => {
        throw new Error('database down');
      },
    });
    burnFor(0, 360, 20);
    await m.evaluateAndDispatch();
    clock.advance(10 * MINUTE);
    burnFor(0, 10, 0);
    await m.evaluateAndDispatch();
    expect(dispatcher.alerts.map((x) => x.context.dedup_key)).toEqual([
      `slo:${NAME}:page-1h-5m`,
      `slo:${NAME}:page-1h-5m`,
    ]);
  });

  test('a rule still burning in its short window is not reported as recovered', async () => {
    const { m, burnFor, recovered } = setup();
    burnFor(0, 5, 20); // short window burns; long window (60 min) holds only 5,000 events at 20x
    await m.evaluateAndDispatch();
    expect(recovered.flat()).not.toContain(`slo:${NAME}:page-1h-5m`);
  });
});

describe('periods', () => {
  test('defaults scale to the period: 28 days shrinks both windows, burn rates unchanged', () => {
    const rules = defaultBurnRateRules({ kind: 'rolling', seconds: 28 * 86400 });
    expect(rules.map((r) => [r.burnRate, r.longWindowSeconds, r.shortWindowSeconds])).toEqual([
      [14.4, 56 * 60, 5 * 60],
      [6, 336 * 60, 28 * 60],
      [1, 4032 * 60, 336 * 60],
    ]);
    const slo = new RatioSLO({
      name: 'x',
      objective: 0.99,
      period: { kind: 'rolling', seconds: 28 * 86400 },
    });
    expect(slo.rules.map((r) => r.name)).toEqual(['page-56m-5m', 'page-5h36m-28m', 'ticket-2d19h12m-5h36m']);
  });

  test("Sloth's error-budget percent converts to the workbook's burn rates", () => {
    expect(burnRateFromBudgetPercent(2, 3600)).toBeCloseTo(14.4, 9);
    expect(burnRateFromBudgetPercent(5, 6 * 3600)).toBeCloseTo(6, 9);
    expect(burnRateFromBudgetPercent(10, 3 * 86400)).toBeCloseTo(1, 9);
  });

  test('a calendar month: bad events of Jan 31 spend January; Feb 1 starts with the whole budget', () => {
    const clock = new FakeClock(0, Date.UTC(2026, 0, 31, 22, 0, 30));
    const m = new SLOMonitor({ clock });
    m.registerRatio(
      new RatioSLO({ name: 'm', objective: 0.99, period: { kind: 'calendar_month', timeZone: 'UTC' } }),
    );
    m.recordEventBatch('m', [
      { good: 900, bad: 100, atMs: Date.UTC(2026, 0, 2) },
      { good: 0, bad: 50, atMs: Date.UTC(2026, 0, 31, 21, 30) },
    ]);
    let s = m.evaluateRatios()[0]!;
    expect(s.periodStartMs).toBe(Date.UTC(2026, 0, 1));
    expect(s).toMatchObject({ events: 1050, badEvents: 150 });
    expect(s.errorBudgetRemaining).toBeCloseTo(1 - 150 / 10.5, 9);
    clock.advance(2.5 * HOUR); // Feb 1, 00:30 UTC
    s = m.evaluateRatios()[0]!;
    expect(s.periodStartMs).toBe(Date.UTC(2026, 1, 1));
    expect(s).toMatchObject({ events: 0, badEvents: 0, errorBudgetRemaining: 1 });
    // Late events of January are refused: they belong to a period that has ended.
    expect(() => m.recordEventBatch('m', [{ good: 1, bad: 0, atMs: Date.UTC(2026, 0, 31, 23, 59) }])).toThrow(
      /events\[0\] time .* is before the SLO's period \(calendar month \(UTC\)\)/,
    );
    m.recordEventBatch('m', [{ good: 9, bad: 1, atMs: Date.UTC(2026, 1, 1, 0, 10) }]);
    expect(m.evaluateRatios()[0]).toMatchObject({ events: 10, badEvents: 1 });
  });

  test('a calendar month in a zone with summer time starts at local midnight (Berlin, April 1 is 22:00 UTC)', () => {
    const clock = new FakeClock(0, Date.UTC(2026, 3, 1, 5));
    const m = new SLOMonitor({ clock });
    m.registerRatio(
      new RatioSLO({
        name: 'b',
        objective: 0.99,
        period: { kind: 'calendar_month', timeZone: 'Europe/Berlin' },
      }),
    );
    expect(m.evaluateRatios()[0]!.periodStartMs).toBe(Date.UTC(2026, 2, 31, 22));
    // 23:30 on March 31 in Berlin: March's period, refused in April's.
    expect(() => m.recordEventBatch('b', [{ good: 0, bad: 7, atMs: Date.UTC(2026, 2, 31, 21, 30) }])).toThrow(
      InvalidSLOError,
    );
    m.recordEventBatch('b', [{ good: 3, bad: 1, atMs: Date.UTC(2026, 2, 31, 22, 30) }]);
    expect(m.evaluateRatios()[0]).toMatchObject({ events: 4, badEvents: 1 });
  });

  test('an unknown time zone is refused', () => {
    expect(
      () =>
        new RatioSLO({
          name: 'z',
          objective: 0.9,
          period: { kind: 'calendar_month', timeZone: 'Mars/Olympus' },
        }),
    ).toThrow(/IANA time zone/);
  });
});

describe('event batches', () => {
  test('10,000 entries are taken, 10,001 refused; nothing of a refused batch is kept', () => {
    const { m, clock } = setup();
    const entry = { good: 1, bad: 0, atMs: clock.now() };
    expect(
      m.recordEventBatch(
        NAME,
        Array.from({ length: 10_000 }, () => entry),
      ),
    ).toBe(10_000);
    expect(() =>
      m.recordEventBatch(
        NAME,
        Array.from({ length: 10_001 }, () => entry),
      ),
    ).toThrow(/at most 10000 event entries/);
    expect(m.evaluateRatios()[0]!.events).toBe(10_000);
  });

  test('the first bad entry is named; nothing of the batch is kept', () => {
    const { m, clock } = setup();
    expect(() =>
      m.recordEventBatch(NAME, [
        { good: 1, bad: 0 },
        { good: 1, bad: -1 },
      ]),
    ).toThrow(/events\[1\]: good and bad must be integers/);
    expect(() => m.recordEventBatch(NAME, [{ good: 1.5, bad: 0 }])).toThrow(/events\[0\]/);
    expect(() => m.recordEventBatch(NAME, [{ good: 1, bad: 0, atMs: clock.now() + 5 * MINUTE + 1 }])).toThrow(
      /more than 5 minutes ahead/,
    );
    expect(() => m.recordEventBatch(NAME, [{ good: 1, bad: 0, atMs: Number.NaN }])).toThrow(/valid time/);
    // Past year 9999 (or before year 1) the message could not name the time: toISOString threw and
    // RecordSloSamples answered INTERNAL for a caller's bad time (a black-box probe, binary gRPC).
    for (const atMs of [1e16, -1e16, 253_402_300_800_000])
      expect(() => m.recordEventBatch(NAME, [{ good: 1, bad: 0, atMs }])).toThrow(
        new InvalidSLOError('events[0] time is out of range (0001-01-01 to 9999-12-31)'),
      );
    expect(() => m.recordEventBatch(NAME, [{ good: 1, bad: 0, atMs: clock.now() - 31 * DAY }])).toThrow(
      /before the SLO's period \(30d\)/,
    );
    expect(m.evaluateRatios()[0]!.events).toBe(0);
    expect(m.recordEventBatch(NAME, [{ good: 1, bad: 0, atMs: clock.now() + 5 * MINUTE }])).toBe(1);
    expect(m.recordEventBatch('nobody', [{ good: 1, bad: 0 }])).toBe(-1);
  });

  test('an event stamped 5 minutes ahead does not evict a bucket still inside the 6 h window', () => {
    const { m, clock, rule } = setup();
    // Bad events 5 h 55 min ago, still inside the 6 h window (360 minute buckets): the slot a
    // bucket 5 minutes ahead would take in a ring of exactly 360.
    m.recordEventBatch(NAME, [{ good: 0, bad: 150, atMs: clock.now() - 355 * MINUTE }]);
    m.recordEventBatch(NAME, [{ good: 10, bad: 0, atMs: clock.now() + 5 * MINUTE }]);
    expect(rule('page-6h-30m').longWindowEvents).toBe(150);
  });

  test('a late event older than six hours counts in the hour buckets and never wipes newer minutes', () => {
    const { m, clock, rule } = setup();
    m.recordEventBatch(NAME, [{ good: 0, bad: 200, atMs: clock.now() }]);
    m.recordEventBatch(NAME, [{ good: 500, bad: 0, atMs: clock.now() - 7 * HOUR }]);
    expect(rule('page-1h-5m')).toMatchObject({ longWindowEvents: 200, firing: true });
    expect(m.evaluateRatios()[0]!.events).toBe(700);
  });
});
