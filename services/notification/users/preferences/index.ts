/** The preferences area: import from here. */
export * from './types';
export type { PreferenceStore, StoredChoice } from './store';
export {
  InMemoryPreferenceStore,
  DEFAULT_MEMORY_MAX_USERS,
  type InMemoryPreferenceStoreOptions,
} from './memory-store';
export { DatabasePreferenceStore, PREFERENCES_TABLE } from './database-store';
export {
  Preferences,
  MAX_CHOICES_PER_CATEGORY,
  MAX_USER_ID_LENGTH,
  checkUserId,
  type PreferencesOptions,
} from './preference-book';
export {
  UnsubscribeLinks,
  UNSUBSCRIBE_PATH,
  ONE_CLICK,
  MAX_TOKEN_LENGTH,
  type UnsubscribeHeaders,
  type UnsubscribeLinksOptions,
  type UnsubscribeTarget,
} from './unsubscribe';
export {
  unsubscribeRoutes,
  MAX_UNSUBSCRIBE_BODY_BYTES,
  UNSUBSCRIBE_PAGE_HEADERS,
  type UnsubscribeRoutesDeps,
} from './unsubscribe-http';
