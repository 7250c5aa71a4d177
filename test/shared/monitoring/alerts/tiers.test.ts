import {
  type AlertBatch,
  type AlertChannel,
  alertsConfigSchema,
  AlertTier,
  BusinessHours,
  createAlertDispatcher,
  severityRank,
  resolveTier,
  TierAwareDispatcher,
} from '../../../../shared/monitoring';
import { captureLogger, FakeClock, FakeTimers, settle } from '../helpers';

class RecordingChannel implements AlertChannel {
  readonly batches: AlertBatch[] = [];
  constructor(readonly name = 'recording') {}
  async send(batch: AlertBatch): Promise<void> {
    this.batches.push(batch);
  }
  titles(): string[][] {
    return this.batches.map((b) => b.alerts.map((a) => a.title));
  }
}

class FailingChannel implements AlertChannel {
  readonly name = 'failing';
  async send(): Promise<void> {
    throw new Error('down');
  }
}

const HOUR = 3_600_000;
// 2026-01-05 is a Monday.
const MON_0800_UTC = Date.UTC(2026, 0, 5, 8, 0);

function setup(opts: { maxHeld?: number; maxDigest?: number; wall?: number } = {}) {
  const clock = new FakeClock(0, opts.wall ?? MON_0800_UTC);
  const timers = new FakeTimers(clock);
  const p0 = new RecordingChannel('p0');
  const p1 = new RecordingChannel('p1');
  const p2 = new RecordingChannel('p2');
  const { logger, lines } = captureLogger();
  const dispatcher = new TierAwareDispatcher({
    channels: { P0_PAGE: [p0], P1_BUSINESS_HOURS: [p1], P2_DIGEST: [p2] },
    businessHours: new BusinessHours({
      time_zone: 'UTC',
      days: ['mon', 'tue', 'wed', 'thu', 'fri'],
      open: '09:00',
      close: '17:00',
    }),
    digestIntervalSeconds: 3600,
    maxHeld: opts.maxHeld,
    maxDigest: opts.maxDigest,
    clock,
    timers,
    logger,
  });
  return { clock, timers, p0, p1, p2, dispatcher, lines };
}

describe('BusinessHours', () => {
  const paris = new BusinessHours({
    time_zone: 'Europe/Paris',
    days: ['mon', 'tue', 'wed', 'thu', 'fri'],
    open: '09:00',
    close: '17:30',
  });

  it('reads the local time of its time zone', () => {
    // Monday 2026-01-05: Paris is UTC+1 in winter.
    expect(paris.isOpen(Date.UTC(2026, 0, 5, 7, 59))).toBe(false);
    expect(paris.isOpen(Date.UTC(2026, 0, 5, 8, 0))).toBe(true);
    expect(paris.isOpen(Date.UTC(2026, 0, 5, 16, 29))).toBe(true);
    expect(paris.isOpen(Date.UTC(2026, 0, 5, 16, 30))).toBe(false);
    // Saturday.
    expect(paris.isOpen(Date.UTC(2026, 0, 10, 10, 0))).toBe(false);
  });

  it('finds the next opening across a weekend and across the change to summer time', () => {
    // Friday 2026-03-27 18:00 Paris (17:00 UTC) -> Monday 2026-03-30 09:00 Paris, now UTC+2 (07:00 UTC).
    expect(paris.nextOpening(Date.UTC(2026, 2, 27, 17, 0))).toBe(Date.UTC(2026, 2, 30, 7, 0));
    // Monday 06:30:15 UTC (07:30:15 Paris) -> 08:00 UTC the same day.
    expect(paris.nextOpening(Date.UTC(2026, 0, 5, 6, 30, 15))).toBe(Date.UTC(2026, 0, 5, 8, 0));
    // Already open: now.
    expect(paris.nextOpening(Date.UTC(2026, 0, 5, 9, 0))).toBe(Date.UTC(2026, 0, 5, 9, 0));
  });

  it('finds the opening after the current window (the next release of a dispatcher that released at opening)', () => {
    const utc = new BusinessHours({
      time_zone: 'UTC',
      days: ['mon', 'tue', 'wed', 'thu', 'fri'],
      open: '09:00',
      close: '17:00',
    });
    // Monday 09:00 (open) -> Tuesday 09:00; Friday 16:59 -> Monday 09:00; closed: the next opening.
    expect(utc.openingAfter(Date.UTC(2026, 0, 5, 9, 0))).toBe(Date.UTC(2026, 0, 6, 9, 0));
    expect(utc.openingAfter(Date.UTC(2026, 0, 9, 16, 59, 30))).toBe(Date.UTC(2026, 0, 12, 9, 0));
    expect(utc.openingAfter(Date.UTC(2026, 0, 5, 20, 0))).toBe(Date.UTC(2026, 0, 6, 9, 0));
    // Open every day, all day but the last minute.
    const allDay = new BusinessHours({
      time_zone: 'UTC',
      days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'],
      open: '00:00',
      close: '23:59',
    });
    expect(allDay.openingAfter(Date.UTC(2026, 0, 5, 0, 0))).toBe(Date.UTC(2026, 0, 6, 0, 0));
  });

  it('rejects an unknown time zone, malformed times and close before open', () => {
    expect(
      () => new BusinessHours({ time_zone: 'Mars/Olympus', days: ['mon'], open: '09:00', close: '17:00' }),
    ).toThrow('unknown time zone');
    expect(() => new BusinessHours({ time_zone: 'UTC', days: ['mon'], open: '9am', close: '17:00' })).toThrow(
      'HH:MM',
    );
    expect(
      () => new BusinessHours({ time_zone: 'UTC', days: ['mon'], open: '17:00', close: '09:00' }),
    ).toThrow('close must be after open');
    expect(() => new BusinessHours({ time_zone: 'UTC', days: [], open: '09:00', close: '17:00' })).toThrow(
      'at least one day',
    );
  });
});

describe('TierAwareDispatcher', () => {
  it('sends P0 at once, even outside business hours', async () => {
    const { dispatcher, p0, p1 } = setup();
    await dispatcher.sendAlert('db down', 'primary unreachable', 'critical', { tier: 'P0_PAGE', db: 'main' });
    expect(p0.batches).toHaveLength(1);
    expect(p0.batches[0]).toMatchObject({ tier: 'P0_PAGE', reason: 'immediate', dropped: 0 });
    expect(p0.batches[0]!.alerts[0]).toMatchObject({ title: 'db down', context: { db: 'main' } });
    expect(p1.batches).toHaveLength(0);
  });

  it('routes a missing or unknown tier to P1', async () => {
    expect(resolveTier(undefined)).toBe(AlertTier.P1_BUSINESS_HOURS);
    expect(resolveTier('P9_WHENEVER')).toBe(AlertTier.P1_BUSINESS_HOURS);
    const { dispatcher, timers, p1, p0, p2 } = setup({ wall: Date.UTC(2026, 0, 5, 10, 0) });
    await dispatcher.sendAlert('a', 'm', 'high');
    await dispatcher.sendAlert('b', 'm', 'high', { tier: 'P9_WHENEVER' });
    await dispatcher.sendMetricAlert('lag', 5, 1, { tier: 42 });
    expect(p1.titles()).toEqual([['a'], ['b'], ['metric lag over threshold']]);
    expect(p1.batches[2]!.alerts[0]!.metric).toEqual({ name: 'lag', currentValue: 5, threshold: 1 });
    expect(p0.batches.length + p2.batches.length).toBe(0);
    timers.advance(0);
  });

  it('holds P1 outside business hours and releases the held alerts as one batch at opening', async () => {
    const { dispatcher, timers, p1 } = setup();
    await dispatcher.sendAlert('first', 'm', 'high', { tier: 'P1_BUSINESS_HOURS' });
    await dispatcher.sendAlert('second', 'm', 'medium', { tier: 'P1_BUSINESS_HOURS' });
    expect(p1.batches).toHaveLength(0);
    expect(await dispatcher.heldCount()).toBe(2);
    timers.advance(HOUR - 1);
    await settle();
    expect(p1.batches).toHaveLength(0);
    timers.advance(1); // 09:00
    await settle();
    expect(p1.titles()).toEqual([['first', 'second']]);
    expect(p1.batches[0]!.reason).toBe('business_hours_opened');
    expect(await dispatcher.heldCount()).toBe(0);
  });

  it('holds P1 over the weekend until Monday opening', async () => {
    // Friday 2026-01-09 18:00 UTC.
    const { dispatcher, timers, p1 } = setup({ wall: Date.UTC(2026, 0, 9, 18, 0) });
    await dispatcher.sendAlert('weekend', 'm', 'high');
    timers.advance(62 * HOUR); // Monday 08:00
    await settle();
    expect(p1.batches).toHaveLength(0);
    timers.advance(HOUR);
    await settle();
    expect(p1.titles()).toEqual([['weekend']]);
  });

  it('drops the oldest held P1 alert at the bound and reports the count with the release', async () => {
    const { dispatcher, timers, p1, lines } = setup({ maxHeld: 2 });
    for (const t of ['a', 'b', 'c']) await dispatcher.sendAlert(t, 'm', 'high');
    expect(await dispatcher.heldCount()).toBe(2);
    timers.advance(HOUR);
    await settle();
    expect(p1.titles()).toEqual([['b', 'c']]);
    expect(p1.batches[0]!.dropped).toBe(1);
    expect(lines.some((l) => l.msg === 'alert buffer full; oldest alerts dropped' && l.dropped === 1)).toBe(
      true,
    );
  });

  it('accumulates P2 and sends one digest per interval, nothing when empty', async () => {
    const { dispatcher, timers, p2 } = setup();
    await dispatcher.sendAlert('x', 'm', 'low', { tier: 'P2_DIGEST' });
    await dispatcher.sendAlert('y', 'm', 'low', { tier: 'P2_DIGEST' });
    expect(p2.batches).toHaveLength(0);
    timers.advance(HOUR);
    await settle();
    expect(p2.titles()).toEqual([['x', 'y']]);
    expect(p2.batches[0]).toMatchObject({ tier: 'P2_DIGEST', reason: 'digest', dropped: 0 });
    timers.advance(HOUR);
    await settle();
    expect(p2.batches).toHaveLength(1);
    await dispatcher.sendAlert('z', 'm', 'low', { tier: 'P2_DIGEST' });
    timers.advance(HOUR);
    await settle();
    expect(p2.titles()).toEqual([['x', 'y'], ['z']]);
  });

  it('a digest still on its way when the next ones are due is not claimed and sent again', async () => {
    const clock = new FakeClock(0, MON_0800_UTC);
    const timers = new FakeTimers(clock);
    const releases: Array<() => void> = [];
    const sent: string[][] = [];
    const slow: AlertChannel = {
      name: 'slow',
      send: (batch) => {
        sent.push(batch.alerts.map((a) => a.title));
        return new Promise<void>((resolve) => releases.push(resolve));
      },
    };
    const d = new TierAwareDispatcher({ channels: { P2_DIGEST: [slow] }, clock, timers });
    await d.sendAlert('x', 'm', 'low', { tier: 'P2_DIGEST' });
    timers.advance(HOUR);
    await settle();
    expect(sent).toEqual([['x']]);
    // Twelve more digests fall due (far beyond the claim's lease) while the first hangs.
    timers.advance(12 * HOUR);
    await settle();
    expect(sent).toEqual([['x']]);
    for (const release of releases.splice(0)) release();
    await d.settled();
    expect(sent).toEqual([['x']]);
    expect(await d.pendingDigestCount()).toBe(0);
    await d.shutdown();
  });

  it('bounds the digest: the oldest are dropped and counted', async () => {
    const { dispatcher, p2 } = setup({ maxDigest: 3 });
    for (let i = 0; i < 5; i++) await dispatcher.sendAlert(`d${i}`, 'm', 'low', { tier: 'P2_DIGEST' });
    expect(await dispatcher.pendingDigestCount()).toBe(3);
    await dispatcher.flushDigest();
    expect(p2.titles()).toEqual([['d2', 'd3', 'd4']]);
    expect(p2.batches[0]!.dropped).toBe(2);
  });

  it('sends held and accumulated alerts on shutdown, stops its timers, and sends later alerts at once', async () => {
    const { dispatcher, timers, p1, p2 } = setup();
    await dispatcher.sendAlert('held', 'm', 'high');
    await dispatcher.sendAlert('digest', 'm', 'low', { tier: 'P2_DIGEST' });
    await dispatcher.shutdown();
    expect(p1.batches.map((b) => [b.reason, b.alerts.map((a) => a.title)])).toEqual([['shutdown', ['held']]]);
    expect(p2.batches.map((b) => [b.reason, b.alerts.map((a) => a.title)])).toEqual([
      ['shutdown', ['digest']],
    ]);
    expect(timers.pending).toBe(0);
    await dispatcher.sendAlert('late', 'm', 'low', { tier: 'P2_DIGEST' });
    expect(p2.titles()).toEqual([['digest'], ['late']]);
    await dispatcher.shutdown();
  });

  it('keeps delivering to the other channels when one fails, and logs the failure', async () => {
    const good = new RecordingChannel();
    const { logger, lines } = captureLogger();
    const d = new TierAwareDispatcher({
      channels: { P0_PAGE: [new FailingChannel(), good] },
      logger,
      timers: new FakeTimers(),
    });
    await d.sendAlert('p', 'm', 'critical', { tier: 'P0_PAGE' });
    expect(good.batches).toHaveLength(1);
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ level: 50, channel: 'failing', msg: 'alert channel failed' }),
      ]),
    );
    await d.shutdown();
  });
});

describe('alerts config', () => {
  it('has defaults: UTC, Monday to Friday, 09:00-17:00, hourly digest, no channel listed', () => {
    const c = alertsConfigSchema().parse(undefined);
    expect(c.business_hours).toEqual({
      time_zone: 'UTC',
      days: ['mon', 'tue', 'wed', 'thu', 'fri'],
      open: '09:00',
      close: '17:00',
    });
    expect(c).toMatchObject({
      digest_interval_seconds: 3600,
      max_held: 1000,
      max_digest: 1000,
      channels: [],
    });
  });

  it.each([
    [{ business_hours: { time_zone: 'Nowhere/City' } }, 'IANA time zone'],
    [{ business_hours: { open: '25:00' } }, 'HH:MM'],
    [{ business_hours: { open: '18:00', close: '08:00' } }, 'close after open'],
    [{ business_hours: { days: ['monday'] } }, 'expected days'],
    [{ digest_interval_seconds: 0 }, 'greater than 0'],
    [{ digest_interval: 60 }, 'digest_interval'],
    [{ channels: [{ name: 'w', type: 'webhook', webhook: { url: 'ftp://x' } }] }, 'http'],
    [{ channels: [{ name: 'w', type: 'webhook', webhook: { url: 'http://x' }, tiers: ['P7'] }] }, 'P0_PAGE'],
    [{ channels: [{ name: 'l', type: 'log', min_severity: 'urgent' }] }, 'low, medium'],
    [{ channels: [{ name: 'x', type: 'pager' }] }, 'type'],
    [
      { channels: [{ name: 'w', type: 'webhook', webhook: { url: 'http://x', max_attempts: 11 } }] },
      'at most 10',
    ],
    [
      {
        channels: [
          { name: 'a', type: 'log' },
          { name: 'a', type: 'log' },
        ],
      },
      'duplicate channel name',
    ],
  ])('rejects %j', (input, message) => {
    const r = alertsConfigSchema().safeParse(input);
    expect(r.success).toBe(false);
    expect(JSON.stringify(r.error?.issues)).toContain(message);
  });

  it('builds a dispatcher that logs every tier when no channel is configured', async () => {
    const { logger, lines } = captureLogger();
    const clock = new FakeClock(0, Date.UTC(2026, 0, 5, 10, 0));
    const d = createAlertDispatcher(alertsConfigSchema().parse({ digest_interval_seconds: '30m' }), {
      logger,
      clock,
      timers: new FakeTimers(clock),
    });
    await d.sendAlert('now', 'paged', 'critical', { tier: 'P0_PAGE' });
    expect(lines).toEqual([
      expect.objectContaining({ level: 50, alert: 'now', tier: 'P0_PAGE', reason: 'immediate' }),
    ]);
    await d.shutdown();
  });

  it('sends a channel only the alerts at or above its min_severity (unknown severities rank as medium)', async () => {
    const { logger, lines } = captureLogger();
    const clock = new FakeClock(0, Date.UTC(2026, 0, 5, 10, 0));
    const config = alertsConfigSchema().parse({
      channels: [{ name: 'loud', type: 'log', min_severity: 'medium', tiers: ['P0_PAGE'] }],
    });
    const d = createAlertDispatcher(config, { logger, clock, timers: new FakeTimers(clock) });
    await d.sendAlert('quiet', 'm', 'low', { tier: 'P0_PAGE' });
    await d.sendAlert('odd', 'm', 'Unheard-Of', { tier: 'P0_PAGE' });
    await d.sendAlert('warn', 'm', 'WARNING', { tier: 'P0_PAGE' });
    await d.sendAlert('other tier', 'm', 'critical', { tier: 'P1_BUSINESS_HOURS' });
    expect(lines.filter((l) => l.event === 'alert').map((l) => l.alert)).toEqual(['odd', 'warn']);
    await d.shutdown();
  });

  it('ranks severities low < medium = warning < high < critical, in any case', () => {
    expect(['LOW', 'medium', 'Warning', 'high', 'critical', 'whatever'].map(severityRank)).toEqual([
      0, 1, 1, 2, 3, 1,
    ]);
  });
});
