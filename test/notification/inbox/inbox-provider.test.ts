import { DEFAULT_INBOX_CONFIG } from '../../../services/notification/inbox/config';
import {
  DatabaseInboxStore,
  INBOX_EVENTS_CHANNEL,
} from '../../../services/notification/inbox/database-store';
import { InboxProvider } from '../../../services/notification/inbox/inbox-provider';
import { InMemoryInboxStore } from '../../../services/notification/inbox/memory-store';
import {
  NOTIFICATION_MIGRATIONS_TABLE,
  notificationMigrations,
} from '../../../services/notification/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { openStorage } from '../../../shared/storage/database';
import { PgNotifyFeed } from '../../../shared/streams/notify-feed';
import { createTestDatabase } from '../../support/database';
import { newUser, take } from './support';

describe('InboxProvider', () => {
  it('when store_backend is memory, it wires an in-memory store behind a working service', async () => {
    const provider = new InboxProvider({
      config: { ...DEFAULT_INBOX_CONFIG, store_backend: 'memory' },
      logger: silentLogger(),
    });
    await provider.start();
    try {
      expect(provider.store).toBeInstanceOf(InMemoryInboxStore);
      const user = newUser();
      await provider.service.send({ userId: user, title: 't', body: 'b' });
      expect(await provider.service.countUnread(user)).toBe(1);
      expect((await provider.health.check()).details.backend).toBe('memory');
    } finally {
      await provider.stop();
    }
  });

  it('when store_backend is database on PostgreSQL storage, it listens and serves events', async () => {
    const db = await createTestDatabase('provider');
    const storage = await openStorage(
      { url: db.url, data_dir: '', pool_max: 2 },
      [{ migrations: notificationMigrations, tableName: NOTIFICATION_MIGRATIONS_TABLE }],
      silentLogger(),
    );
    // The LISTEN connection the composition root hands the inbox.
    const notifications = new PgNotifyFeed({
      url: db.url,
      channels: [INBOX_EVENTS_CHANNEL],
      logger: silentLogger(),
    });
    await notifications.start();
    const provider = new InboxProvider({
      config: DEFAULT_INBOX_CONFIG,
      storage,
      notifications,
      logger: silentLogger(),
    });
    try {
      await provider.start();
      expect(provider.store).toBeInstanceOf(DatabaseInboxStore);
      expect(provider.hub.listening).toBe(true);
      const user = newUser();
      const sent = await provider.service.send({ userId: user, title: 't', body: 'b' });
      const [event] = await take(provider.service.watch(user, { after: '0' })[Symbol.asyncIterator](), 1);
      expect(event!.message!.id).toBe(sent.id);
    } finally {
      await provider.stop();
      await notifications.stop();
      // The storage belongs to its opener: the provider left the pool open.
      expect((await storage.knex.raw('select 1 as one')).rows[0].one).toBe(1);
      await storage.close();
      await db.drop();
    }
  });

  it('when store_backend is database without storage, start fails with a clear error', async () => {
    const provider = new InboxProvider({ config: DEFAULT_INBOX_CONFIG, logger: silentLogger() });
    await expect(provider.start()).rejects.toThrow(
      'inbox: store_backend "database" needs the service storage',
    );
  });

  it('when used before start, its parts throw instead of returning undefined', () => {
    const provider = new InboxProvider({ config: DEFAULT_INBOX_CONFIG, logger: silentLogger() });
    expect(() => provider.service).toThrow('InboxProvider is not started');
  });
});
