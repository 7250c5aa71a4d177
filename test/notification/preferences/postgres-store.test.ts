import type { Knex } from 'knex';
import { notificationMigrations } from '../../../services/notification/migrations';
import { DatabasePreferenceStore } from '../../../services/notification/preferences';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { createTestDatabase } from '../../support/database';
import { describePreferenceContract } from './preference-contract';

describePreferenceContract('DatabasePreferenceStore on PostgreSQL', async () => {
  const db = await createTestDatabase('prefs');
  const knex: Knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 4 }, silentLogger());
  await runMigrations(knex, notificationMigrations);
  return {
    store: new DatabasePreferenceStore(knex),
    close: async () => {
      await knex.destroy();
      await db.drop();
    },
  };
});
