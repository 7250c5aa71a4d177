/**
 * InboxProvider (spec name): wires the inbox from config. It builds the store chosen by
 * inbox.store_backend, the event hub, InboxService, the retention purge and the health check.
 * The database is not its own: the composition root opens it (and runs every migration) once and
 * hands it over as `storage`.
 */
import type { Logger } from '../../../shared/logging/logger';
import type { Storage } from '../../../shared/storage/database';
import type { NotifyFeed } from '../../../shared/streams/notify-feed';
import type { InboxConfig } from './config';
import { DatabaseInboxStore, type DatabaseInboxStoreOptions } from './database-store';
import { InboxHealthCheck } from './inbox-health';
import { InboxHub } from './inbox-hub';
import { InboxService } from './inbox-service';
import { InMemoryInboxStore } from './memory-store';
import { InboxRetention } from './retention';
import type { InboxStoreProtocol } from './store';
import type { Clock } from '../../../shared/runtime/clock';

/** What InboxProvider needs. */
export interface InboxProviderOptions {
  config: InboxConfig;
  logger: Logger;
  /** The service's database (its `knex`); required when store_backend is `database`. */
  storage?: Pick<Storage, 'knex'>;
  /**
   * The service's LISTEN feed (the composition root opens it on a PostgreSQL server), so the hub
   * hears other replicas' commits; used with store_backend `database` only.
   */
  notifications?: NotifyFeed;
  /** Injectable clock (messages, events, retention). */
  clock?: Clock;
  store?: Omit<DatabaseInboxStoreOptions, 'logger'>;
}

/** Builds and owns the inbox's parts. Call start() before using them, stop() at shutdown. */
export class InboxProvider {
  private parts: {
    store: InboxStoreProtocol;
    hub: InboxHub;
    service: InboxService;
    retention: InboxRetention;
    health: InboxHealthCheck;
  } | null = null;

  constructor(private readonly options: InboxProviderOptions) {}

  /** Builds the store on the given storage, starts the hub and schedules the retention purge. */
  async start(): Promise<void> {
    if (this.parts) return;
    const { config, logger } = this.options;
    let store: InboxStoreProtocol;
    let notifications: NotifyFeed | undefined;
    if (config.store_backend === 'memory') {
      store = new InMemoryInboxStore(logger);
    } else {
      const storage = this.options.storage;
      if (!storage) throw new Error('inbox: store_backend "database" needs the service storage');
      store = new DatabaseInboxStore(storage.knex, { ...this.options.store, logger });
      // Other replicas can only exist on a PostgreSQL server (the root has no feed on PGlite).
      notifications = this.options.notifications;
    }
    const hub = new InboxHub(store, {
      bufferSize: config.watch_buffer_size,
      maxWatchers: config.max_watchers,
      maxWatchersPerUser: config.max_watchers_per_user,
      stallMs: config.watch_stall_seconds * 1000,
      logger,
      notifications,
    });
    const service = new InboxService({ store, hub, config, logger, clock: this.options.clock });
    const retention = new InboxRetention({ store, config, logger, clock: this.options.clock });
    const health = new InboxHealthCheck(store, logger);
    await hub.start();
    retention.start();
    this.parts = { store, hub, service, retention, health };
  }

  /** Stops the purge and the hub (ending open watches); the storage stays open (its owner closes it). */
  async stop(): Promise<void> {
    const parts = this.parts;
    this.parts = null;
    if (parts) {
      await parts.retention.stop();
      await parts.hub.stop();
    }
  }

  private get started(): NonNullable<InboxProvider['parts']> {
    if (!this.parts) throw new Error('InboxProvider is not started');
    return this.parts;
  }

  /** The InboxStoreProtocol in use. */
  get store(): InboxStoreProtocol {
    return this.started.store;
  }

  /** The InboxService. */
  get service(): InboxService {
    return this.started.service;
  }

  /** The live event hub. */
  get hub(): InboxHub {
    return this.started.hub;
  }

  /** The retention purge. */
  get retention(): InboxRetention {
    return this.started.retention;
  }

  /** The `notifications.inbox` health check. */
  get health(): InboxHealthCheck {
    return this.started.health;
  }
}
