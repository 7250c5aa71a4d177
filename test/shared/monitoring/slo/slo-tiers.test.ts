import {
  type AlertBatch,
  type AlertChannel,
  BusinessHours,
  LogAlertChannel,
  SLO,
  SLOMonitor,
  TierAwareDispatcher,
} from '../../../../shared/monitoring';
import { captureLogger, FakeClock, FakeTimers, settle } from '../helpers';

class RecordingChannel implements AlertChannel {
  readonly name = 'recording';
  readonly batches: AlertBatch[] = [];
  async send(batch: AlertBatch): Promise<void> {
    this.batches.push(batch);
  }
}

const HOUR = 3_600_000;

describe('SLOMonitor through the tier-aware dispatcher', () => {
  // Saturday 2026-01-10 12:00 UTC: outside business hours.
  const clock = new FakeClock(0, Date.UTC(2026, 0, 10, 12, 0));
  const timers = new FakeTimers(clock);
  const page = new RecordingChannel();
  const business = new RecordingChannel();
  const digest = new RecordingChannel();
  const { logger, lines } = captureLogger();
  const dispatcher = new TierAwareDispatcher({
    channels: {
      P0_PAGE: [page],
      P1_BUSINESS_HOURS: [business],
      P2_DIGEST: [digest, new LogAlertChannel(logger)],
    },
    businessHours: new BusinessHours({
      time_zone: 'UTC',
      days: ['mon', 'tue', 'wed', 'thu', 'fri'],
      open: '09:00',
      close: '17:00',
    }),
    digestIntervalSeconds: 3600,
    clock,
    timers,
  });
  const monitor = new SLOMonitor({ clock, alertDispatcher: dispatcher });
  const slo = (name: string, tier: 'P0_PAGE' | 'P1_BUSINESS_HOURS' | 'P2_DIGEST') =>
    new SLO({ name, metric: `${name}.latency`, percentile: 0.5, thresholdMs: 100, windowSeconds: 600, tier });

  afterAll(() => dispatcher.shutdown());

  it('pages P0 at once, holds P1 until Monday opening, and digests P2 hourly', async () => {
    monitor.register(slo('checkout', 'P0_PAGE'));
    monitor.register(slo('reports', 'P1_BUSINESS_HOURS'));
    monitor.register(slo('batch', 'P2_DIGEST'));
    for (const m of ['checkout', 'reports', 'batch']) monitor.recordSample(`${m}.latency`, 250);

    expect(await monitor.evaluateAndDispatch()).toHaveLength(3);
    expect(page.batches.map((b) => b.alerts[0]!.context.slo)).toEqual(['checkout']);
    expect(business.batches).toHaveLength(0);
    expect(digest.batches).toHaveLength(0);

    timers.advance(HOUR);
    await settle();
    expect(digest.batches.map((b) => b.alerts.map((a) => a.context.slo))).toEqual([['batch']]);
    expect(lines).toEqual([
      expect.objectContaining({ event: 'alert_digest', tier: 'P2_DIGEST', count: 1, dropped: 0 }),
    ]);

    // Monday 09:00 is 45 hours after Saturday 12:00.
    timers.advance(43 * HOUR);
    await settle();
    expect(business.batches).toHaveLength(0);
    timers.advance(HOUR);
    await settle();
    expect(business.batches).toHaveLength(1);
    expect(business.batches[0]!.alerts[0]!.context).toMatchObject({
      tier: 'P1_BUSINESS_HOURS',
      slo: 'reports',
      burn_rate: 2.5,
    });
  });
});
