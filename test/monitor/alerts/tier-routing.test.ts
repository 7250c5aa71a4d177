/**
 * The alerts area's routing with a hand-driven clock and timers, into real local webhook servers:
 * P0 goes out at once, P1 waits for business hours, P2 waits for the digest; `min_severity` and
 * `tiers` pick the channels; a clean stop sends what is held.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Registry } from 'prom-client';
import { silentLogger } from '../../../shared/logging/logger';
import { NoopErrorTracker } from '../../../shared/monitoring/errors/error-tracking';
import { createAlertsArea, type AlertsArea } from '../../../services/monitor/alerts/alerts-area';
import { loadMonitorConfig, type MonitorConfigInput } from '../../../services/monitor/config';
import { FakeClock, FakeTimers, listen, settle, type TestServer } from '../../shared/monitoring/helpers';
import { waitFor } from '../../support/wait';
import { alertWebhookBodies } from '../../../services/monitor/rpc/alert-wire';
import { NotificationClient } from '../../../services/monitor/notification/notification-client';

type Hook = TestServer & { titles: string[] };

async function hookServer(): Promise<Hook> {
  const titles: string[] = [];
  const server = await listen((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      titles.push((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { title: string }).title);
      res.end();
    });
  });
  return Object.assign(server, { titles });
}

const HOUR = 3600_000;

describe('alert tiers through the alerts area', () => {
  let all: Hook;
  let pager: Hook;
  let clock: FakeClock;
  let timers: FakeTimers;
  let area: AlertsArea;

  function build(alerts: MonitorConfigInput['alerts']): AlertsArea {
    const config = loadMonitorConfig({ alerts }, { env: {}, file: null });
    return createAlertsArea(config.alerts, {
      logger: silentLogger(),
      registry: new Registry(),
      tracker: new NoopErrorTracker(),
      serviceName: 'monitor',
      clock,
      timers,
      webhookBodies: alertWebhookBodies,
      notifier: (settings) => new NotificationClient(settings),
    });
  }

  beforeEach(async () => {
    all = await hookServer();
    pager = await hookServer();
    // Monday 5 January 2026, 20:00 UTC: outside the default business hours (Mon-Fri 09:00-17:00 UTC).
    clock = new FakeClock(0, Date.UTC(2026, 0, 5, 20, 0));
    timers = new FakeTimers(clock);
    area = build({
      digest_interval_seconds: '1h',
      channels: [
        { name: 'all', type: 'webhook', webhook: { url: all.url, max_attempts: 1 } },
        {
          name: 'pager',
          type: 'webhook',
          tiers: ['P0_PAGE', 'P1_BUSINESS_HOURS'],
          min_severity: 'high',
          webhook: { url: pager.url, max_attempts: 1 },
        },
      ],
    });
  });
  afterEach(async () => {
    await area.stop();
    await all.close();
    await pager.close();
  });

  const raise = (title: string, tier: string, severity = 'critical') =>
    area.hub.raise({ kind: 'generic', title, severity, context: { tier } });

  it('sends P0 at once, holds P1 until business hours open and P2 until the digest', async () => {
    await raise('digest me', 'P2_DIGEST');
    await raise('tomorrow', 'P1_BUSINESS_HOURS');
    await raise('page now', 'P0_PAGE');
    await area.hub.settled();
    expect(all.titles).toEqual(['page now']);
    expect(pager.titles).toEqual(['page now']);

    timers.advance(HOUR); // 21:00: the first digest
    await waitFor(() => all.titles.length === 2, 'the digest');
    expect(all.titles).toEqual(['page now', 'digest me']);
    expect(pager.titles).toEqual(['page now']); // P2 is not the pager's tier

    timers.advance(12 * HOUR); // Tuesday 09:00: business hours open
    await waitFor(() => all.titles.length === 3 && pager.titles.length === 2, 'the held P1 alert');
    expect(all.titles[2]).toBe('tomorrow');
    expect(pager.titles).toEqual(['page now', 'tomorrow']);
  });

  it('gives a channel only the alerts at or above its min_severity', async () => {
    for (const severity of ['low', 'medium', 'warning', 'high', 'CRITICAL', 'mystery'])
      await raise(`p0 ${severity}`, 'P0_PAGE', severity);
    await area.hub.settled();
    expect(pager.titles).toEqual(['p0 high', 'p0 CRITICAL']);
    expect(all.titles).toHaveLength(6);
  });

  it('a clean stop sends what is held and what waits for the digest', async () => {
    await raise('held', 'P1_BUSINESS_HOURS');
    await raise('digested', 'P2_DIGEST');
    await settle();
    expect(all.titles).toEqual([]);
    await area.stop();
    expect(all.titles.sort()).toEqual(['digested', 'held']);
    expect(pager.titles).toEqual(['held']);
  });
});
