/**
 * The notification service's migrations, in order. Listed explicitly (not globbed) so the same list
 * runs from TypeScript sources and from dist; append new migrations at the end.
 */
import type { NamedMigration } from '../../../shared/storage/migrations';
import * as inbox from './20261121000000_inbox';
import * as inboxEvents from './20261123000100_inbox_events';
import * as deliveries from './20261123000300_deliveries';
import * as deliveryMaintenance from './20261123000350_delivery_maintenance';
import * as deliveryFailure from './20261123000400_delivery_failure';
import * as deliveryTraceParent from './20261123000500_delivery_trace_parent';
import * as suppressions from './20261123100000_suppressions';
import * as deliveryReceipts from './20261123110000_delivery_receipts';
import * as deliveryEvents from './20261124000000_delivery_events';
import * as deliveryEventSequencer from './20261125000000_delivery_event_sequencer';
import * as deliveryHotStatements from './20261125000100_delivery_hot_statements';
import * as deliveriesFillfactor from './20261125000200_deliveries_fillfactor';
import * as inboundReceipts from './20261126110000_inbound_receipts';
import * as deliveryQueueRules from './20261126120000_delivery_queue_rules';
import * as deliveryScans from './20261126130000_delivery_scans';
import * as users from './20261127000000_users';
import * as preferences from './20261127000050_preferences';
import * as templates from './20261127000100_templates';
import * as notifications from './20261127000200_notifications';
import * as deliveryUser from './20261127000300_delivery_user';
import * as userQuietHours from './20261128000000_user_quiet_hours';
import * as notifyCaps from './20261128000100_notify_caps';
import * as notifySchedule from './20261128000200_notify_schedule';
import * as notifyDigests from './20261128000300_notify_digests';
import * as channelChecks from './20261128000900_channel_checks';
import * as inboundSms from './20261128800000_inbound_sms';
import * as deliveryActivity from './20261129000000_delivery_activity';
import * as partitions from './20261129100000_partitions';
import * as deliveryCompletePruned from './20261129140000_delivery_complete_pruned';
import * as deliveryEventSequencerPruned from './20261130200000_delivery_event_sequencer_pruned';
import * as deliveryEventSequencerLoop from './20261130210000_delivery_event_sequencer_loop';
import * as deliveryDueEligible from './20261201000000_delivery_due_eligible';

/** Every notification migration, oldest first. */
export const notificationMigrations: readonly NamedMigration[] = [
  { name: '20261121000000_inbox', ...inbox },
  { name: '20261123000100_inbox_events', ...inboxEvents },
  { name: '20261123000300_deliveries', ...deliveries },
  { name: '20261123000350_delivery_maintenance', ...deliveryMaintenance },
  { name: '20261123000400_delivery_failure', ...deliveryFailure },
  { name: '20261123000500_delivery_trace_parent', ...deliveryTraceParent },
  { name: '20261123100000_suppressions', ...suppressions },
  { name: '20261123110000_delivery_receipts', ...deliveryReceipts },
  { name: '20261124000000_delivery_events', ...deliveryEvents },
  { name: '20261125000000_delivery_event_sequencer', ...deliveryEventSequencer },
  { name: '20261125000100_delivery_hot_statements', ...deliveryHotStatements },
  { name: '20261125000200_deliveries_fillfactor', ...deliveriesFillfactor },
  { name: '20261126110000_inbound_receipts', ...inboundReceipts },
  { name: '20261126120000_delivery_queue_rules', ...deliveryQueueRules },
  { name: '20261126130000_delivery_scans', ...deliveryScans },
  { name: '20261127000000_users', ...users },
  { name: '20261127000050_preferences', ...preferences },
  { name: '20261127000100_templates', ...templates },
  { name: '20261127000200_notifications', ...notifications },
  { name: '20261127000300_delivery_user', ...deliveryUser },
  { name: '20261128000000_user_quiet_hours', ...userQuietHours },
  { name: '20261128000100_notify_caps', ...notifyCaps },
  { name: '20261128000200_notify_schedule', ...notifySchedule },
  { name: '20261128000300_notify_digests', ...notifyDigests },
  { name: '20261128000900_channel_checks', ...channelChecks },
  { name: '20261128800000_inbound_sms', ...inboundSms },
  { name: '20261129000000_delivery_activity', ...deliveryActivity },
  { name: '20261129100000_partitions', ...partitions },
  { name: '20261129140000_delivery_complete_pruned', ...deliveryCompletePruned },
  { name: '20261130200000_delivery_event_sequencer_pruned', ...deliveryEventSequencerPruned },
  { name: '20261130210000_delivery_event_sequencer_loop', ...deliveryEventSequencerLoop },
  { name: '20261201000000_delivery_due_eligible', ...deliveryDueEligible },
];

/** The knex table that records which notification migrations ran. */
export const NOTIFICATION_MIGRATIONS_TABLE = 'knex_migrations';
