/**
 * `npm run migrate`: applies the notification service's schema migrations to the configured database and
 * exits (shared/runtime/run-migrate.ts).
 */
import { runMigrate } from '../../shared/runtime/run-migrate';
import { loadNotificationConfig } from './config';
import { NOTIFICATION_MIGRATION_SETS } from './app';

runMigrate({
  name: 'notification-migrate',
  loadConfig: loadNotificationConfig,
  sets: NOTIFICATION_MIGRATION_SETS,
});
