/**
 * The preferences area's storage port: the choices users made, nothing else (defaults and the
 * rules live in the book, preference-book.ts). One memory and one database implementation.
 */
import type { NotifyChannel } from '../../notify/config';

/** One stored choice of a user. */
export interface StoredChoice {
  category: string;
  channel: NotifyChannel;
  enabled: boolean;
}

/** Where users' choices are kept. */
export interface PreferenceStore {
  /** Every choice the user made (any order; possibly for categories no longer configured). */
  read(userId: string): Promise<StoredChoice[]>;
  /** One choice, or undefined when the user made none for that category channel. */
  readOne(userId: string, category: string, channel: NotifyChannel): Promise<boolean | undefined>;
  /** Records the choices at once (all or none), replacing earlier ones of the same category channel. */
  write(userId: string, choices: readonly StoredChoice[], at: Date): Promise<void>;
  /** Erases every choice of the user. */
  erase(userId: string): Promise<void>;
}
