/**
 * The monitor's Alert on the wire: the svc.monitor.v1 `Alert` message that WatchAlerts streams and
 * the webhook channel posts (its proto JSON mapping). The domain's Alert (../alerts/alert.ts) is
 * translated here and nowhere else.
 */
import { create, toJsonString } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import {
  type Alert as WireAlert,
  AlertKind as WireAlertKind,
  AlertSchema,
  AlertState as WireAlertState,
} from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import type { AlertBatch } from '../../../shared/monitoring/alerts/channels';
import type { Alert, AlertKind } from '../alerts/alert';
import type { AlertState } from '../alerts/store';
import { alertOf } from '../alerts/alert-hub';

const WIRE_KIND: Record<AlertKind, WireAlertKind> = {
  generic: WireAlertKind.GENERIC,
  metric: WireAlertKind.METRIC,
  slo: WireAlertKind.SLO,
};

/** The lifecycle states on the wire. */
export const WIRE_ALERT_STATE: Record<AlertState, WireAlertState> = {
  triggered: WireAlertState.TRIGGERED,
  acknowledged: WireAlertState.ACKNOWLEDGED,
  resolved: WireAlertState.RESOLVED,
};

/** The wire message of an alert. */
export function alertToWire(alert: Alert): WireAlert {
  return create(AlertSchema, {
    id: alert.id,
    alertName: alert.alertName,
    kind: WIRE_KIND[alert.kind],
    title: alert.title,
    message: alert.message,
    severity: alert.severity,
    context: alert.context,
    sourceService: alert.sourceService,
    firedAt: timestampFromMs(alert.firedAt),
    state: WIRE_ALERT_STATE[alert.state ?? 'triggered'],
    dedupKey: alert.dedupKey ?? '',
  });
}

/** The webhook bodies of a batch: one POST per alert, the proto `Alert` as JSON. */
export function alertWebhookBodies(batch: AlertBatch): string[] {
  return batch.alerts.map((record) => toJsonString(AlertSchema, alertToWire(alertOf(record))));
}
