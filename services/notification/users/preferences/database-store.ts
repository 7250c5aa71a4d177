/**
 * DatabasePreferenceStore: users' choices in `user_preferences` (knex: PostgreSQL or PGlite), one
 * row per (user_id, category, channel). A write is one INSERT ... ON CONFLICT statement, so it is
 * all or nothing without an explicit transaction.
 */
import type { Knex } from 'knex';
import type { NotifyChannel } from '../../notify/config';
import type { PreferenceStore, StoredChoice } from './store';

/** The table of this store (migration 20261127000050_preferences). */
export const PREFERENCES_TABLE = 'user_preferences';

interface Row {
  user_id: string;
  category: string;
  channel: NotifyChannel;
  enabled: boolean;
}

/** The database PreferenceStore. */
export class DatabasePreferenceStore implements PreferenceStore {
  constructor(private readonly knex: Knex) {}

  async read(userId: string): Promise<StoredChoice[]> {
    const rows = await this.knex<Row>(PREFERENCES_TABLE)
      .select('category', 'channel', 'enabled')
      .where({ user_id: userId });
    return rows.map((r) => ({ category: r.category, channel: r.channel, enabled: r.enabled }));
  }

  async readOne(userId: string, category: string, channel: NotifyChannel): Promise<boolean | undefined> {
    const row = await this.knex<Row>(PREFERENCES_TABLE)
      .first('enabled')
      .where({ user_id: userId, category, channel });
    return row?.enabled;
  }

  async write(userId: string, choices: readonly StoredChoice[], at: Date): Promise<void> {
    if (choices.length === 0) return;
    await this.knex(PREFERENCES_TABLE)
      .insert(
        choices.map((c) => ({
          user_id: userId,
          category: c.category,
          channel: c.channel,
          enabled: c.enabled,
          updated_at: at,
        })),
      )
      .onConflict(['user_id', 'category', 'channel'])
      .merge(['enabled', 'updated_at']);
  }

  async erase(userId: string): Promise<void> {
    await this.knex(PREFERENCES_TABLE).where({ user_id: userId }).delete();
  }
}
