/** The inbox area: import from here. */
export * from './types';
export * from './config';
export * from './store';
export { InMemoryInboxStore } from './memory-store';
export { DatabaseInboxStore, INBOX_EVENTS_CHANNEL, type DatabaseInboxStoreOptions } from './database-store';
export { InboxHub, parseCursor, toInboxEvent, type InboxHubOptions } from './inbox-hub';
export {
  InboxService,
  MAX_USER_ID_LENGTH,
  type InboxSentListener,
  type InboxServiceOptions,
} from './inbox-service';
export { InboxRetention, INBOX_PURGE_JOB, type InboxRetentionOptions, type PurgeResult } from './retention';
export { InboxHealthCheck, INBOX_HEALTH_CHECK_NAME, type InboxHealthResult } from './inbox-health';
export { InboxProvider, type InboxProviderOptions } from './inbox-provider';
