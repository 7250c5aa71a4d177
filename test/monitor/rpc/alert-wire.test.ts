/**
 * The monitor's Alert crosses to the wire in rpc/ only: the domain Alert the hub raises becomes the
 * svc.monitor.v1 `Alert` (WatchAlerts) and the webhook body (its proto JSON), field for field.
 */
import { timestampMs } from '@bufbuild/protobuf/wkt';
import { AlertKind } from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { AlertTier } from '../../../shared/monitoring/alerts/tiers';
import type { AlertRecord } from '../../../shared/monitoring/alerts/channels';
import type { Alert } from '../../../services/monitor/alerts/alert';
import { AlertHub, type AlertRouter } from '../../../services/monitor/alerts/alert-hub';
import { alertToWire, alertWebhookBodies } from '../../../services/monitor/rpc/alert-wire';

const FIRED = Date.UTC(2026, 10, 26, 9, 30, 15, 250);

const domainAlert = (extra: Partial<Alert> = {}): Alert => ({
  id: '5b0e5a0a-7d54-4c8e-8b7c-3a2c1f0e9d11',
  alertName: 'checkout-p99',
  kind: 'slo',
  title: 'Checkout slow 🐢',
  message: 'p99 at 480 ms (עברית, 中文)',
  severity: 'critical',
  context: { host: 'db-1', tier: 'P0_PAGE' },
  sourceService: 'checkout',
  firedAt: FIRED,
  ...extra,
});

describe('alertToWire', () => {
  it('carries every field of the domain alert, the time as a Timestamp', () => {
    const wire = alertToWire(domainAlert());
    expect(wire).toMatchObject({
      id: '5b0e5a0a-7d54-4c8e-8b7c-3a2c1f0e9d11',
      alertName: 'checkout-p99',
      kind: AlertKind.SLO,
      title: 'Checkout slow 🐢',
      message: 'p99 at 480 ms (עברית, 中文)',
      severity: 'critical',
      context: { host: 'db-1', tier: 'P0_PAGE' },
      sourceService: 'checkout',
    });
    expect(timestampMs(wire.firedAt!)).toBe(FIRED);
  });

  it.each([
    ['generic', AlertKind.GENERIC],
    ['metric', AlertKind.METRIC],
    ['slo', AlertKind.SLO],
  ] as const)('maps kind %s to its wire enum', (kind, wireKind) => {
    expect(alertToWire(domainAlert({ kind })).kind).toBe(wireKind);
  });
});

describe('alertWebhookBodies', () => {
  it('posts the alert the hub raised as the proto Alert in its JSON mapping, one body per alert', async () => {
    // The router keeps the records the hub routes: those are what a webhook channel is given.
    const records: AlertRecord[] = [];
    const router: AlertRouter = { dispatch: async (r) => void records.push(r), shutdown: async () => {} };
    const hub = new AlertHub({
      router,
      recentSize: 10,
      maxWatchers: 1,
      watchBufferSize: 1,
      defaultSource: 'monitor',
      clock: { now: () => FIRED, monotonic: () => 0 },
    });
    const a = await hub.raise({
      kind: 'metric',
      title: 'queue deep',
      severity: 'warning',
      alertName: 'queue',
    });
    const b = await hub.raise({
      kind: 'generic',
      title: 'disk',
      message: 'full',
      severity: 'high',
      context: { n: 3 },
    });
    const bodies = alertWebhookBodies({
      tier: AlertTier.P0_PAGE,
      reason: 'immediate',
      alerts: records,
      dropped: 0,
    });
    expect(bodies.map((body) => JSON.parse(body))).toEqual([
      {
        id: a.id,
        alertName: 'queue',
        kind: 'ALERT_KIND_METRIC',
        title: 'queue deep',
        severity: 'warning',
        sourceService: 'monitor',
        firedAt: '2026-11-26T09:30:15.250Z',
        // The lifecycle state (issue 27): a raised alert is TRIGGERED, the resolved notification RESOLVED.
        state: 'ALERT_STATE_TRIGGERED',
      },
      {
        id: b.id,
        alertName: 'disk',
        kind: 'ALERT_KIND_GENERIC',
        title: 'disk',
        message: 'full',
        severity: 'high',
        context: { n: '3' },
        sourceService: 'monitor',
        firedAt: '2026-11-26T09:30:15.250Z',
        // The lifecycle state (issue 27): a raised alert is TRIGGERED, the resolved notification RESOLVED.
        state: 'ALERT_STATE_TRIGGERED',
      },
    ]);
  });
});
