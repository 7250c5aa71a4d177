/**
 * The alert dispatchers emit "alert triggered" on the event bus: the logging dispatcher, the
 * tier-aware one (at once, also for held and digested alerts) and the webhook path built from the
 * `alerts` section, which still posts to a real local receiver.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  alertsConfigSchema,
  type AlertTriggeredEvent,
  createAlertDispatcher,
  LoggingAlertDispatcher,
  MonitoringEventBus,
  MonitoringEventKind,
  monitoringEvents,
  TierAwareDispatcher,
} from '../../../../shared/monitoring';
import { FakeClock, FakeTimers, listen } from '../helpers';

function listenTo(bus: MonitoringEventBus): AlertTriggeredEvent[] {
  const seen: AlertTriggeredEvent[] = [];
  bus.on(MonitoringEventKind.ALERT_TRIGGERED, (e) => void seen.push({ ...e }));
  return seen;
}

describe('alert triggered events', () => {
  it('the logging dispatcher emits alert_name and severity for both kinds of alert', async () => {
    const bus = new MonitoringEventBus();
    const seen = listenTo(bus);
    const d = new LoggingAlertDispatcher(undefined, { events: bus });
    await d.sendAlert('disk', 'disk almost full', 'high', { host: 'a1' });
    await d.sendMetricAlert('queue.depth', 250, 100);
    await d.sendMetricAlert('queue.depth', 150, 100);
    expect(seen).toEqual([
      { alert_name: 'disk', severity: 'high' },
      { alert_name: 'queue.depth', severity: 'critical' },
      { alert_name: 'queue.depth', severity: 'warning' },
    ]);
  });

  it('the logging dispatcher uses the process bus by default', async () => {
    const seen: AlertTriggeredEvent[] = [];
    const off = monitoringEvents.on(MonitoringEventKind.ALERT_TRIGGERED, (e) => void seen.push({ ...e }));
    try {
      await new LoggingAlertDispatcher().sendAlert('cpu', 'hot', 'low');
    } finally {
      off();
    }
    expect(seen).toEqual([{ alert_name: 'cpu', severity: 'low' }]);
  });

  it('the tier-aware dispatcher emits when an alert is raised, also when it is held or digested', async () => {
    const bus = new MonitoringEventBus();
    const seen = listenTo(bus);
    const timers = new FakeTimers();
    const d = new TierAwareDispatcher({ channels: {}, events: bus, timers, clock: new FakeClock() });
    await d.sendAlert('slo burn', 'fast burn', 'critical', { tier: 'P2_DIGEST' });
    await d.sendMetricAlert('errors', 10, 1, { tier: 'P0_PAGE' });
    expect(await d.pendingDigestCount()).toBe(1);
    expect(seen).toEqual([
      { alert_name: 'slo burn', severity: 'critical' },
      { alert_name: 'errors', severity: 'critical' },
    ]);
    await d.shutdown();
  });

  it('the webhook path: the event is emitted and the webhook still receives the alert', async () => {
    const bodies: unknown[] = [];
    const server = await listen((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        res.end('ok');
      });
    });
    const bus = new MonitoringEventBus();
    const seen = listenTo(bus);
    const config = alertsConfigSchema().parse({
      channels: [
        {
          name: 'hook',
          type: 'webhook',
          tiers: ['P0_PAGE'],
          webhook: { url: `${server.url}/hook`, max_attempts: 1 },
        },
      ],
    });
    const d = createAlertDispatcher(config, { events: bus, timers: new FakeTimers() });
    try {
      await d.sendAlert('db down', 'primary unreachable', 'critical', { tier: 'P0_PAGE' });
    } finally {
      await d.shutdown();
      await server.close();
    }
    expect(seen).toEqual([{ alert_name: 'db down', severity: 'critical' }]);
    expect(bodies).toHaveLength(1);
    expect(JSON.stringify(bodies[0])).toContain('db down');
  });
});
