/**
 * The preferences area's records and its port: whether a channel of a category reaches a user.
 * Read by `Notify`, changed through UserService (Get/UpdatePreferences), the admin page and the
 * one-click unsubscribe link. Domain types only: `rpc/` maps them.
 *
 * This file is the contract the areas built in parallel agreed on; the preferences area implements
 * `PreferenceBook` (memory and database stores behind it).
 */
import type { NotifyChannel } from '../../notify/config';

/** One effective preference: whether a channel of a category reaches the user. */
export interface Preference {
  category: string;
  channel: NotifyChannel;
  enabled: boolean;
  /** The category is required: the channel cannot be turned off. */
  required: boolean;
  /** The user's own choice (false: the category's default). */
  chosen: boolean;
}

/** One choice of UpdatePreferences. */
export interface PreferenceChoice {
  category: string;
  channel: NotifyChannel;
  enabled: boolean;
}

/**
 * Preferences, by user. Choices are kept only for configured categories and their channels; the
 * effective value is the user's choice, else the category's default. Throws the shared DomainErrors.
 */
export interface PreferenceBook {
  /** Every configured category's channels, effective for the user. NotFoundError for an unknown user. */
  get(userId: string): Promise<Preference[]>;
  /**
   * All or nothing: InvalidArgumentError naming a required category turned off, an unknown category
   * or a channel the category does not use. NotFoundError for an unknown user.
   */
  update(userId: string, choices: PreferenceChoice[]): Promise<Preference[]>;
  /** Whether the channel of the category reaches the user (false for a channel the category lacks). */
  isEnabled(userId: string, category: string, channel: NotifyChannel): Promise<boolean>;
  /** Erases the user's choices (DeleteUser). */
  eraseUser(userId: string): Promise<void>;
}
