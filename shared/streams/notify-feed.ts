/**
 * NotifyFeed: how a live hub hears that another replica committed events. The composition root opens
 * the one LISTEN connection (PgNotifyFeed) for every stream channel of its service and hands it to
 * the hubs; a hub never opens a connection of its own. Without a PostgreSQL server (memory, PGlite)
 * there is one process and no feed.
 */
import type { Logger } from '../logging/logger';
import { PgNotificationListener } from '../storage/pg-listener';

/** What a hub registers for one channel. */
export interface NotifyReceiver {
  /** A NOTIFY payload arrived on the channel. */
  onNotification(payload: string): void;
  /** The connection is (again) listening: notifications sent meanwhile are lost, re-read the log. */
  onConnect(): void;
}

/** Cross-replica notifications, by channel. */
export interface NotifyFeed {
  /** Registers a receiver of the channel; returns unsubscribe. */
  subscribe(channel: string, receiver: NotifyReceiver): () => void;
  /** True while the connection is listening. */
  readonly listening: boolean;
}

/** Options of PgNotifyFeed. */
export interface PgNotifyFeedOptions {
  /** The PostgreSQL server (the service's database URL). */
  url: string;
  /** Every channel the service's hubs subscribe to; LISTENed on one connection. */
  channels: readonly string[];
  logger: Logger;
  /** Shown in pg_stat_activity. */
  applicationName?: string;
  /** Interval of the connection's liveness ping (default 30 s). */
  pingIntervalMs?: number;
}

/** One LISTEN connection (reconnecting with backoff) shared by a service's hubs. */
export class PgNotifyFeed implements NotifyFeed {
  private readonly receivers = new Map<string, Set<NotifyReceiver>>();
  private readonly listener: PgNotificationListener;

  constructor(private readonly options: PgNotifyFeedOptions) {
    this.listener = new PgNotificationListener({
      url: options.url,
      channel: options.channels,
      logger: options.logger,
      applicationName: options.applicationName ?? 'stream-feed',
      pingIntervalMs: options.pingIntervalMs,
      onNotification: (payload, channel) => {
        for (const receiver of this.receivers.get(channel) ?? []) receiver.onNotification(payload);
      },
      onConnect: () => {
        for (const set of this.receivers.values()) for (const receiver of set) receiver.onConnect();
      },
    });
  }

  subscribe(channel: string, receiver: NotifyReceiver): () => void {
    if (!this.options.channels.includes(channel))
      throw new Error(`the notify feed does not listen on channel ${channel}`);
    let set = this.receivers.get(channel);
    if (!set) this.receivers.set(channel, (set = new Set()));
    set.add(receiver);
    // Whatever was missed before this subscription is read by the hub's first read.
    return () => set.delete(receiver);
  }

  get listening(): boolean {
    return this.listener.listening;
  }

  /** Opens the connection (a failure is logged and retried in the background). */
  async start(): Promise<void> {
    await this.listener.start();
  }

  /** Closes the connection. */
  async stop(): Promise<void> {
    await this.listener.stop();
  }

  /** The same as stop(): the composition root closes the feed with its pools. */
  close(): Promise<void> {
    return this.stop();
  }
}
