/**
 * InMemoryPreferenceStore: users' choices in a Map, for tests and throwaway runs. Bounded by the
 * number of users it holds (each user's choices are bounded by the book: categories x 4).
 */
import { ResourceExhaustedError } from '../../../../shared/errors';
import type { NotifyChannel } from '../../notify/config';
import type { PreferenceStore, StoredChoice } from './store';

/** Default bound on the users with choices kept in memory. */
export const DEFAULT_MEMORY_MAX_USERS = 100_000;

/** Options of InMemoryPreferenceStore. */
export interface InMemoryPreferenceStoreOptions {
  /** Most users with choices; a new user past it is RESOURCE_EXHAUSTED. */
  maxUsers?: number;
}

/** The memory PreferenceStore. */
export class InMemoryPreferenceStore implements PreferenceStore {
  private readonly users = new Map<string, Map<string, StoredChoice>>();
  private readonly maxUsers: number;

  constructor(options: InMemoryPreferenceStoreOptions = {}) {
    this.maxUsers = options.maxUsers ?? DEFAULT_MEMORY_MAX_USERS;
  }

  async read(userId: string): Promise<StoredChoice[]> {
    return [...(this.users.get(userId)?.values() ?? [])].map((c) => ({ ...c }));
  }

  async readOne(userId: string, category: string, channel: NotifyChannel): Promise<boolean | undefined> {
    return this.users.get(userId)?.get(key(category, channel))?.enabled;
  }

  async write(userId: string, choices: readonly StoredChoice[], _at: Date): Promise<void> {
    if (choices.length === 0) return;
    let mine = this.users.get(userId);
    if (!mine) {
      if (this.users.size >= this.maxUsers) {
        throw new ResourceExhaustedError('the in-memory preference store is full');
      }
      mine = new Map();
      this.users.set(userId, mine);
    }
    for (const c of choices) mine.set(key(c.category, c.channel), { ...c });
  }

  async erase(userId: string): Promise<void> {
    this.users.delete(userId);
  }
}

function key(category: string, channel: string): string {
  return `${category}\u0000${channel}`;
}
