/**
 * A dedicated PostgreSQL connection that LISTENs on one channel and reconnects with backoff when it
 * drops. Notifications sent while nobody listened are lost (before the first connect too), so
 * `onConnect` runs after every successful connect and tells the owner to catch up.
 *
 * A quiet LISTEN connection can die without a word (a NAT or firewall forgets it, the server host
 * vanishes): TCP keep-alive and a periodic `SELECT 1` find that out, and a failed ping counts as a
 * dropped connection.
 */
import { Client } from 'pg';
import type { Logger } from '../logging/logger';
import { Backoff } from '../runtime/backoff';

/** Options of PgNotificationListener. */
export interface PgNotificationListenerOptions {
  url: string;
  /** The channel, or several on the one connection (`onNotification` says which). */
  channel: string | readonly string[];
  logger: Logger;
  onNotification(payload: string, channel: string): void;
  /** Called after every successful connect, the first included, once LISTEN is in place. */
  onConnect?(): void;
  /** Interval of the liveness ping (default 30 s). */
  pingIntervalMs?: number;
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** Shown in pg_stat_activity. */
  applicationName?: string;
}

/** LISTEN on a channel over its own connection, reconnecting forever until stopped. */
export class PgNotificationListener {
  private client: Client | null = null;
  private stopped = false;
  private everConnected = false;
  /** Failed connects since the last good one. */
  private retries = 0;
  private timer: NodeJS.Timeout | null = null;
  private pingTimer: NodeJS.Timeout | null = null;
  private backoffMs: number;
  private readonly log: Logger;
  private readonly channels: readonly string[];

  constructor(private readonly options: PgNotificationListenerOptions) {
    this.backoffMs = options.minBackoffMs ?? 100;
    this.channels = typeof options.channel === 'string' ? [options.channel] : options.channel;
    this.log = options.logger.child({ component: 'pg-listener', channel: this.channels.join(',') });
  }

  /** Connects and listens; when the first attempt fails it is logged and retried in the background. */
  async start(): Promise<void> {
    this.stopped = false;
    await this.connect();
  }

  /** True while a connection is listening. */
  get listening(): boolean {
    return this.client !== null;
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new Client({
      connectionString: this.options.url,
      application_name: this.options.applicationName ?? 'inbox-listener',
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    });
    client.on('notification', (msg) => {
      if (this.channels.includes(msg.channel) && msg.payload !== undefined)
        this.options.onNotification(msg.payload, msg.channel);
    });
    client.on('error', (err) => this.dropped(client, err));
    client.on('end', () => this.dropped(client));
    try {
      await client.connect();
      for (const channel of this.channels) await client.query(`LISTEN ${client.escapeIdentifier(channel)}`);
    } catch (err) {
      client.removeAllListeners('end');
      client.on('error', () => undefined);
      await client.end().catch(() => undefined);
      this.log.warn({ err, retryInMs: this.backoffMs }, 'LISTEN connection failed');
      this.scheduleReconnect();
      return;
    }
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.backoffMs = this.options.minBackoffMs ?? 100;
    this.retries = 0;
    if (this.everConnected) this.log.info('LISTEN connection restored');
    this.everConnected = true;
    this.schedulePing(client);
    this.options.onConnect?.();
  }

  private schedulePing(client: Client): void {
    if (this.pingTimer) clearInterval(this.pingTimer);
    // A ping still unanswered one interval later means the connection is gone even though no error
    // came (a half-open TCP connection never errors by itself).
    let pending = false;
    this.pingTimer = setInterval(() => {
      if (this.client !== client) return;
      if (pending) {
        this.dropped(client, new Error('LISTEN connection ping timed out'));
        return;
      }
      pending = true;
      client.query('SELECT 1').then(
        () => (pending = false),
        (err: unknown) => this.dropped(client, err),
      );
    }, this.options.pingIntervalMs ?? 30_000);
    this.pingTimer.unref();
  }

  private dropped(client: Client, err?: unknown): void {
    if (this.client !== client) return;
    this.client = null;
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.pingTimer = null;
    client.on('error', () => undefined);
    void client.end().catch(() => undefined);
    // end() waits for the server; a silent peer never answers, so drop the socket as well.
    (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
    if (this.stopped) return;
    this.log.warn({ err, retryInMs: this.backoffMs }, 'LISTEN connection lost; reconnecting');
    this.scheduleReconnect();
  }

  /** The reconnect waits: `minBackoffMs` doubled per failed connect, at most `maxBackoffMs`. */
  private reconnectBackoff(): Backoff {
    return new Backoff({
      baseMs: this.options.minBackoffMs ?? 100,
      maxMs: this.options.maxBackoffMs ?? 30000,
    });
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.timer) return;
    const delay = this.backoffMs;
    this.retries++;
    this.backoffMs = this.reconnectBackoff().delayMs(this.retries + 1);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.connect();
    }, delay);
    this.timer.unref();
  }

  /** Stops listening and closes the connection. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.pingTimer = null;
    const client = this.client;
    this.client = null;
    if (client) await client.end().catch(() => undefined);
  }
}
