/**
 * The monitor's migrations, in order (issue 27: the monitor keeps its state in a database). Listed
 * explicitly (not globbed) so the same list runs from TypeScript sources and from dist; append new
 * migrations at the end.
 */
import type { NamedMigration } from '../../../shared/storage/migrations';
import * as monitorState from './20261128500000_monitor_state';
import * as alerts from './20261128600000_alerts';
import * as oncallEscalation from './20261128700000_oncall_escalation';
import * as oncallInboundSms from './20261128800100_oncall_inbound_sms';
import * as sloEvents from './20261128900000_slo_events';
import * as targetHistory from './20261129100000_target_history';
import * as heldAlerts from './20261129200000_held_alerts';
import * as alertOutbox from './20261129300000_alert_outbox';

/** Every monitor migration, oldest first. */
export const monitorMigrations: readonly NamedMigration[] = [
  { name: '20261128500000_monitor_state', ...monitorState },
  { name: '20261128600000_alerts', ...alerts },
  { name: '20261128700000_oncall_escalation', ...oncallEscalation },
  { name: '20261128800100_oncall_inbound_sms', ...oncallInboundSms },
  { name: '20261128900000_slo_events', ...sloEvents },
  { name: '20261129100000_target_history', ...targetHistory },
  { name: '20261129200000_held_alerts', ...heldAlerts },
  { name: '20261129300000_alert_outbox', ...alertOutbox },
];

/** The knex table that records which monitor migrations ran. */
export const MONITOR_MIGRATIONS_TABLE = 'knex_migrations_monitor';
