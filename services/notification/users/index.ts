/** The users area: import from here. */
export * from './types';
export * from './config';
export type { UserStore, UserRecord } from './store';
export { InMemoryUserStore } from './memory-store';
export { DatabaseUserStore } from './database-store';
export { quietHoursEnd, normaliseQuietHours, MAX_QUIET_PERIOD_MS } from './quiet-hours';
export { UserDirectoryService, type UserDirectoryOptions } from './user-directory';
export {
  suppressedContacts,
  type ContactChannel,
  type SuppressedContact,
  type SuppressionReasons,
} from './suppressed';
