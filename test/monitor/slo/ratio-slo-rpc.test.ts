/**
 * Issue 31 over the wire: RegisterRatioSlo, RecordSloSamples with `slo` + `events`, ListSlos and
 * EvaluateSlos statuses, one alert per burn-rate rule (dedup key `slo:<name>:<rule>`) resolved when
 * its short window recovers, and the ratio gauges on /metrics; on the memory store and on
 * PostgreSQL (two replicas sharing the events).
 */
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { AlertService } from '../../../shared/gen/svc/monitor/v1/alerts_pb';
import { AlertState, SloCalendarPeriod } from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { loadMonitorConfig, type MonitorConfigInput } from '../../../services/monitor/config';
import { createTestDatabase } from '../../support/database';
import { startMonitorApp, startMonitorOnDatabase, type RunningMonitorApp } from '../../support/monitor-app';

let db: Awaited<ReturnType<typeof createTestDatabase>>;
const running: RunningMonitorApp[] = [];
beforeAll(async () => {
  db = await createTestDatabase('mon_ratio_slo');
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});
afterAll(async () => {
  await db?.drop();
});

const STORES = [
  ['memory', (o: MonitorConfigInput) => startMonitorApp(o)],
  ['database', (o: MonitorConfigInput) => startMonitorOnDatabase(db.url, o)],
] as const;

async function code(p: Promise<unknown>): Promise<{ code: Code; message: string }> {
  try {
    await p;
  } catch (err) {
    const e = ConnectError.from(err);
    return { code: e.code, message: e.rawMessage };
  }
  throw new Error('expected the call to fail');
}

let seq = 0;
const uniq = (base: string) => `${base}-${++seq}-${Math.random().toString(36).slice(2, 7)}`;

describe.each(STORES)('ratio SLOs on the %s store', (_kind, startOn) => {
  async function start(o: MonitorConfigInput = {}): Promise<RunningMonitorApp> {
    const m = await startOn({ slo: { suppression_window_seconds: 0 }, ...o });
    running.push(m);
    return m;
  }

  it('registers with the workbook rules and a 30-day period by default; the same again is OK, another is ALREADY_EXISTS', async () => {
    const m = await start();
    const name = uniq('checkout-availability');
    const slo = { name, target: 0.999, description: 'Zahlung 💳 결제 دفع' };
    const { slo: registered } = await m.monitorConnect.registerRatioSlo({ slo });
    expect(registered?.period?.kind).toEqual({
      case: 'rolling',
      value: expect.objectContaining({ seconds: 2_592_000n }),
    });
    expect(
      registered?.rules.map((r) => [
        r.name,
        r.severity,
        r.burnRate,
        r.longWindow?.seconds,
        r.shortWindow?.seconds,
      ]),
    ).toEqual([
      ['page-1h-5m', 'page', 14.4, 3600n, 300n],
      ['page-6h-30m', 'page', 6, 21_600n, 1800n],
      ['ticket-3d-6h', 'ticket', 1, 259_200n, 21_600n],
    ]);
    expect(registered).toMatchObject({
      tier: 'P0_PAGE',
      minEvents: 100n,
      description: 'Zahlung 💳 결제 دفع',
    });
    // A service registers its SLOs at every start: the same definition is no change.
    await m.monitorConnect.registerRatioSlo({ slo });
    expect(await code(m.monitorConnect.registerRatioSlo({ slo: { ...slo, target: 0.99 } }))).toMatchObject({
      code: Code.AlreadyExists,
    });
    // One name space with latency SLOs.
    expect(
      await code(
        m.monitorConnect.registerSlo({ slo: { name, metric: 'x', percentile: 0.9, thresholdMs: 1 } }),
      ),
    ).toMatchObject({ code: Code.AlreadyExists });
    const listed = await m.monitorConnect.listSlos({});
    expect(listed.ratioSlos.filter((s) => s.name === name)).toHaveLength(1);
    expect(listed.statuses.find((s) => s.name === name)).toMatchObject({
      kind: 'ratio',
      target: 0.999,
      events: 0n,
      errorBudgetRemaining: 1,
    });
  });

  it("takes Sloth's error-budget percent, a calendar month in a zone, and names bad input by field", async () => {
    const m = await start();
    const { slo } = await m.monitorConnect.registerRatioSlo({
      slo: {
        name: uniq('month'),
        target: 0.99,
        period: { kind: { case: 'calendar', value: SloCalendarPeriod.MONTH }, timeZone: 'Asia/Tokyo' },
        rules: [
          {
            severity: 'page',
            longWindow: { seconds: 3600n },
            shortWindow: { seconds: 300n },
            errorBudgetPercent: 2,
          },
        ],
      },
    });
    expect(slo?.rules[0]).toMatchObject({ name: 'page-1h-5m', burnRate: 14.4 });
    expect(slo?.period).toMatchObject({ timeZone: 'Asia/Tokyo' });
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ target: 1 }, /target must be between 0 and 1/],
      [{ target: 0 }, /target/],
      [
        { period: { kind: { case: 'rolling', value: { seconds: 3600n } } } },
        /period.rolling must be between 1 day and 90 days/,
      ],
      [
        { period: { kind: { case: 'rolling', value: { seconds: 91n * 86400n } } } },
        /between 1 hour and 90 days|90 days/,
      ],
      [
        { period: { kind: { case: 'calendar', value: SloCalendarPeriod.MONTH }, timeZone: 'Mars/Olympus' } },
        /IANA time zone/,
      ],
      [
        {
          rules: [
            { severity: 'page', longWindow: { seconds: 300n }, shortWindow: { seconds: 600n }, burnRate: 2 },
          ],
        },
        /short < long/,
      ],
      [
        {
          rules: [
            { severity: 'sev1', longWindow: { seconds: 3600n }, shortWindow: { seconds: 300n }, burnRate: 2 },
          ],
        },
        /rules\[0\].severity/,
      ],
      [
        { rules: [{ severity: 'page', longWindow: { seconds: 3600n }, shortWindow: { seconds: 300n } }] },
        /rules\[0\]: give burn_rate/,
      ],
      [
        {
          rules: [
            {
              severity: 'page',
              longWindow: { seconds: 3600n },
              shortWindow: { seconds: 300n },
              burnRate: 2,
              name: 'Page 1',
            },
          ],
        },
        /rules\[0\].name/,
      ],
      [
        {
          rules: Array.from({ length: 11 }, (_, i) => ({
            severity: 'page',
            longWindow: { seconds: 3600n },
            shortWindow: { seconds: 300n },
            burnRate: 2,
            name: `r${i}`,
          })),
        },
        /at most 10 rules/,
      ],
      [{ tier: 'P9' }, /unknown tier/],
      [{ runbookUrl: 'javascript:alert(1)' }, /runbook_url/],
      [{ name: 'x'.repeat(129) }, /name must be at most 128/],
    ];
    for (const [override, message] of bad) {
      const answer = await code(
        m.monitorConnect.registerRatioSlo({ slo: { name: uniq('bad'), target: 0.99, ...override } }),
      );
      expect([answer.code, answer.message]).toEqual([Code.InvalidArgument, expect.stringMatching(message)]);
    }
    expect(await code(m.monitorConnect.registerRatioSlo({}))).toMatchObject({ code: Code.InvalidArgument });
  });

  it('records timestamped events all or nothing, and answers unknown SLOs and mixed requests plainly', async () => {
    const m = await start();
    const name = uniq('api');
    await m.monitorConnect.registerRatioSlo({ slo: { name, target: 0.99 } });
    const now = Date.now();
    const answer = await m.monitorConnect.recordSloSamples({
      slo: name,
      events: [
        { good: 90n, bad: 10n, time: timestampFromMs(now - 60_000) },
        { good: 50n, bad: 0n },
      ],
    });
    expect(answer.accepted).toBe(150);
    expect(
      await code(m.monitorConnect.recordSloSamples({ slo: uniq('nobody'), events: [{ good: 1n }] })),
    ).toMatchObject({
      code: Code.NotFound,
    });
    expect(
      await code(m.monitorConnect.recordSloSamples({ slo: name, metric: 'm', events: [{ good: 1n }] })),
    ).toMatchObject({ code: Code.InvalidArgument, message: expect.stringMatching(/not both/) });
    const refused = await code(
      m.monitorConnect.recordSloSamples({
        slo: name,
        events: [{ good: 5n }, { good: 1n, time: timestampFromMs(now + 6 * 60_000) }],
      }),
    );
    expect(refused).toMatchObject({
      code: Code.InvalidArgument,
      message: expect.stringMatching(/events\[1\] time .* ahead/),
    });
    expect(
      await code(
        m.monitorConnect.recordSloSamples({
          slo: name,
          events: Array.from({ length: 10_001 }, () => ({ good: 1n })),
        }),
      ),
    ).toMatchObject({ code: Code.InvalidArgument, message: expect.stringMatching(/at most 10000/) });
    expect(
      (
        await m.monitorConnect.recordSloSamples({
          slo: name,
          events: Array.from({ length: 10_000 }, () => ({ good: 1n })),
        })
      ).accepted,
    ).toBe(10_000);
    const status = (await m.monitorConnect.listSlos({})).statuses.find((s) => s.name === name);
    // Nothing of the refused batch was kept: 150 + 10,000 events, 10 bad.
    expect(status).toMatchObject({ events: 10_150n, badEvents: 10n });
    expect(status?.errorBudgetRemaining).toBeCloseTo(1 - 10 / (10_150 * 0.01), 6);
    expect(status?.errorBudgetEvents).toBeCloseTo(101.5, 6);
  });

  it('a page rule fires one alert keyed by SLO and rule, on /metrics too; it resolves when the short window recovers', async () => {
    const m = await start();
    const name = uniq('pay-ok');
    await m.monitorConnect.registerRatioSlo({ slo: { name, target: 0.999 } });
    await m.monitorConnect.recordSloSamples({ slo: name, events: [{ good: 0n, bad: 200n }] });
    const evaluated = await m.monitorConnect.evaluateSlos({ dispatch: true });
    const rules = evaluated.statuses.find((s) => s.name === name)!.rules;
    expect(rules.filter((r) => r.firing).map((r) => r.rule?.name)).toEqual([
      'page-1h-5m',
      'page-6h-30m',
      'ticket-3d-6h',
    ]);
    const alerts = createClient(
      AlertService,
      createConnectTransport({ baseUrl: m.baseUrl, httpVersion: '1.1' }),
    );
    const ours = async () => (await alerts.listAlerts({})).alerts.filter((a) => a.labels.slo === name);
    // The fast burn trips every rule; the SLO pages once (the 1 h rule), the others are muted.
    let list = await ours();
    expect(list.map((a) => [a.dedupKey, a.state])).toEqual([
      [`slo:${name}:page-1h-5m`, AlertState.TRIGGERED],
    ]);
    const metrics = await (await fetch(`${m.baseUrl}/metrics`)).text();
    const line = (metric: string, labels: string) =>
      new RegExp(`^${metric}\\{${labels}\\} (\\S+)$`, 'm').exec(metrics)?.[1];
    expect(line('slo_rule_firing', `slo="${name}",rule="page-1h-5m",severity="page"`)).toBe('1');
    expect(line('slo_objective_ratio', `slo="${name}"`)).toBe('0.999');
    expect(Number(line('slo_period_error_budget_remaining_ratio', `slo="${name}"`))).toBeCloseTo(-999, 6);
    expect(line('slo_sli_error_ratio', `slo="${name}",window="5m"`)).toBe('1');
    expect(Number(line('slo_rule_burn_rate', `slo="${name}",rule="page-1h-5m",window="short"`))).toBeCloseTo(
      1000,
      6,
    );
    // 20,000 good events: the 5 min window burns 200 / 20,200 / 0.001 = 9.9x < 14.4x, but the 6 h
    // rule (6x) still fires: the burn goes on, so the open page stays open, and no second page.
    await m.monitorConnect.recordSloSamples({ slo: name, events: [{ good: 20_000n, bad: 0n }] });
    let firing = (await m.monitorConnect.evaluateSlos({ dispatch: true })).statuses.find(
      (s) => s.name === name,
    )!;
    expect(firing.rules.filter((r) => r.firing).map((r) => r.rule?.name)).toEqual([
      'page-6h-30m',
      'ticket-3d-6h',
    ]);
    list = await ours();
    expect(list.map((a) => [a.dedupKey, a.state])).toEqual([
      [`slo:${name}:page-1h-5m`, AlertState.TRIGGERED],
    ]);
    // 20,000 more: 200 / 40,200 is 4.97x, below both page rules: the page resolves; the slow
    // ticket rule (1x over 3 d and 6 h) still fires, and opens its own ticket.
    await m.monitorConnect.recordSloSamples({ slo: name, events: [{ good: 20_000n, bad: 0n }] });
    firing = (await m.monitorConnect.evaluateSlos({ dispatch: true })).statuses.find((s) => s.name === name)!;
    expect(firing.rules.filter((r) => r.firing).map((r) => r.rule?.name)).toEqual(['ticket-3d-6h']);
    list = await ours();
    expect(list.map((a) => [a.dedupKey, a.state]).sort()).toEqual([
      [`slo:${name}:page-1h-5m`, AlertState.RESOLVED],
      [`slo:${name}:ticket-3d-6h`, AlertState.TRIGGERED],
    ]);
  });
});

describe.each(STORES)('latency SLOs with a period on the %s store', (_kind, startOn) => {
  it('count samples at or under the threshold as good events, alerted by rules scaled to the period, not by the single-window check', async () => {
    const m = await startOn({ slo: { suppression_window_seconds: 0 } });
    running.push(m);
    const name = uniq('search-p99-7d');
    const metric = `search_latency_${seq}`;
    const { slo } = await m.monitorConnect.registerSlo({
      slo: {
        name,
        metric,
        percentile: 0.99,
        thresholdMs: 300,
        period: { kind: { case: 'rolling', value: { seconds: 7n * 86400n } } },
      },
    });
    // 7 days: the workbook's windows x 7/30, to whole minutes.
    expect(slo?.rules.map((r) => r.name)).toEqual(['page-14m-1m', 'page-1h24m-7m', 'ticket-16h48m-1h24m']);
    expect(slo?.minEvents).toBe(100n);
    await m.monitorConnect.recordSloSamples({
      metric,
      valuesMs: [...Array.from({ length: 150 }, () => 900), 300, 12],
    });
    const evaluated = await m.monitorConnect.evaluateSlos({ dispatch: true });
    expect(evaluated.violations.filter((v) => v.slo?.name === name)).toEqual([]);
    const status = evaluated.statuses.find((s) => s.name === name)!;
    expect(status).toMatchObject({ kind: 'latency', target: 0.99, events: 152n, badEvents: 150n });
    expect(status.rules.find((r) => r.rule?.name === 'page-14m-1m')).toMatchObject({ firing: true });
    const listed = await m.monitorConnect.listSlos({});
    expect(listed.slos.find((s) => s.name === name)?.period?.kind.case).toBe('rolling');
    expect(listed.statuses.filter((s) => s.name === name)).toHaveLength(1);
    const alerts = createClient(
      AlertService,
      createConnectTransport({ baseUrl: m.baseUrl, httpVersion: '1.1' }),
    );
    const ours = (await alerts.listAlerts({})).alerts.filter((a) => a.labels.slo === name);
    expect(ours.map((a) => a.dedupKey)).toEqual([`slo:${name}:page-14m-1m`]);
  });

  it('refuses a period with percentile 1, and rules without a period', async () => {
    const m = await startOn({});
    running.push(m);
    const base = { name: uniq('p'), metric: 'm', thresholdMs: 5 };
    const week = { kind: { case: 'rolling' as const, value: { seconds: 7n * 86400n } } };
    expect(
      await code(m.monitorConnect.registerSlo({ slo: { ...base, percentile: 1, period: week } })),
    ).toMatchObject({
      code: Code.InvalidArgument,
      message: expect.stringMatching(/percentile below 1/),
    });
    expect(
      await code(
        m.monitorConnect.registerSlo({
          slo: {
            ...base,
            percentile: 0.9,
            rules: [
              {
                severity: 'page',
                longWindow: { seconds: 3600n },
                shortWindow: { seconds: 300n },
                burnRate: 2,
              },
            ],
          },
        }),
      ),
    ).toMatchObject({ code: Code.InvalidArgument, message: expect.stringMatching(/need a period/) });
  });
});

describe('ratio objectives in the config (slo.ratio_objectives)', () => {
  it('are registered at start: a rolling period as text, a calendar month, Sloth rules', async () => {
    const m = await startMonitorApp({
      slo: {
        ratio_objectives: [
          { name: 'cfg-avail', target: 0.995, period: '28d' },
          {
            name: 'cfg-month',
            target: 0.99,
            period: { calendar: 'month', time_zone: 'Europe/Berlin' },
            rules: [{ severity: 'page', long_window: '1h', short_window: '5m', error_budget_percent: 2 }],
            min_events: 10,
          },
        ],
      },
    });
    running.push(m);
    const listed = await m.monitorConnect.listSlos({});
    const byName = new Map(listed.ratioSlos.map((s) => [s.name, s]));
    expect(byName.get('cfg-avail')?.rules.map((r) => r.name)).toEqual([
      'page-56m-5m',
      'page-5h36m-28m',
      'ticket-2d19h12m-5h36m',
    ]);
    expect(byName.get('cfg-month')).toMatchObject({ minEvents: 10n, period: { timeZone: 'Europe/Berlin' } });
    expect(byName.get('cfg-month')?.rules.map((r) => [r.name, r.burnRate])).toEqual([['page-1h-5m', 14.4]]);
    expect(
      (await m.monitorConnect.recordSloSamples({ slo: 'cfg-month', events: [{ good: 9n, bad: 1n }] }))
        .accepted,
    ).toBe(10);
  });

  it('a bad objective stops the start naming the key', () => {
    expect(() =>
      loadMonitorConfig({ slo: { ratio_objectives: [{ name: 'x', target: 1 }] } }, { env: {}, file: null }),
    ).toThrow(/slo\.ratio_objectives\.0\.target|ratio_objectives\[0\]\.target/);
    expect(() =>
      loadMonitorConfig(
        {
          slo: {
            objectives: [{ name: 'x', metric: 'm', threshold_ms: 1 }],
            ratio_objectives: [{ name: 'x', target: 0.9 }],
          },
        },
        { env: {}, file: null },
      ),
    ).toThrow(/duplicate SLO name "x"/);
  });
});

describe('ratio SLOs on two monitors sharing one database', () => {
  it('a SLO registered on one replica takes events on the other; both see the same window sums', async () => {
    const a = await startMonitorOnDatabase(db.url);
    const b = await startMonitorOnDatabase(db.url);
    running.push(a, b);
    const name = uniq('shared');
    await a.monitorConnect.registerRatioSlo({ slo: { name, target: 0.95 } });
    await b.monitorConnect.recordSloSamples({ slo: name, events: [{ good: 30n, bad: 3n }] });
    await a.monitorConnect.recordSloSamples({ slo: name, events: [{ good: 60n, bad: 7n }] });
    for (const m of [a, b])
      expect((await m.monitorConnect.listSlos({})).statuses.find((s) => s.name === name)).toMatchObject({
        events: 100n,
        badEvents: 10n,
      });
  });
});
