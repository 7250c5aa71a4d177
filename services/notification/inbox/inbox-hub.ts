/**
 * InboxHub: live inbox events per user, for WatchInbox, server-sent events and in-process listeners.
 *
 * Events always come from the store's event log, never from memory alone: a commit in this process
 * (the store's commit listener) or on another replica (PostgreSQL NOTIFY `inbox_events`) only says
 * "user U has news up to seq S"; the hub then reads that user's events after the last one it
 * delivered, one read at a time per user, and only for users somebody watches. Because a user's
 * events commit in seq order (the store's per-user advisory lock), reading "after the last seq"
 * never skips an event, whichever replica wrote it and in whatever order signals arrive.
 *
 * A watcher with a cursor first replays from the store, then goes live; live events that arrive
 * during the replay are buffered and those already replayed are dropped by seq, so there is no gap
 * and no duplicate. Each watcher's buffer is bounded: a live watcher that falls behind is removed and
 * its iterator throws ResourceExhaustedError; it resumes with the last cursor it saw.
 */
import { InvalidArgumentError, ResourceExhaustedError } from '../../../shared/errors';
import type { Logger } from '../../../shared/logging/logger';
import { silentLogger } from '../../../shared/logging/logger';
import { PgNotificationListener } from '../../../shared/storage/pg-listener';
import { INBOX_EVENTS_CHANNEL } from './database-store';
import type { InboxStoreProtocol, StoredInboxEvent } from './store';
import type { InboxEvent, WatchOptions } from './types';

/** Options of InboxHub. */
export interface InboxHubOptions {
  /** Events buffered per watcher (inbox.watch_buffer_size). */
  bufferSize: number;
  logger?: Logger;
  /** PostgreSQL URL to LISTEN on, so commits of other replicas arrive; omit for one process. */
  listenUrl?: string;
  /** Events read from the store per query (default 500). */
  readPageSize?: number;
  /** Delay before retrying a failed store read for a watched user (default 1000 ms). */
  retryDelayMs?: number;
}

const CURSOR = /^[0-9]{1,15}$/;

/** Parses a WatchInbox resume cursor; a malformed one is InvalidArgumentError. */
export function parseCursor(cursor: string): number {
  if (!CURSOR.test(cursor)) throw new InvalidArgumentError('cursor is not a valid inbox cursor', 'cursor');
  return Number(cursor);
}

/** The public shape of a stored event. */
export function toInboxEvent(e: StoredInboxEvent): InboxEvent {
  const event: InboxEvent = {
    cursor: String(e.seq),
    type: e.type,
    userId: e.userId,
    unreadCount: e.unreadCount,
    occurredAt: e.occurredAt,
  };
  if (e.message) event.message = e.message;
  if (e.messageId) event.messageId = e.messageId;
  return event;
}

class Watcher {
  buffer: StoredInboxEvent[] = [];
  live = false;
  /** Set when the buffer overflowed during replay: the replay must read once more. */
  lostDuringReplay = false;
  closed = false;
  failure: Error | null = null;
  private wake: (() => void) | null = null;

  constructor(private readonly capacity: number) {}

  /** Returns false when the watcher just failed (and must be dropped). */
  push(event: StoredInboxEvent): boolean {
    if (this.closed) return true;
    if (this.buffer.length >= this.capacity) {
      if (!this.live) {
        // Everything dropped here is in the store; the replay reads it again.
        this.buffer = [];
        this.lostDuringReplay = true;
      } else {
        this.fail(new ResourceExhaustedError('inbox watcher fell behind; resume from the last cursor'));
        return false;
      }
    }
    this.buffer.push(event);
    this.signal();
    return true;
  }

  fail(err: Error): void {
    this.failure = err;
    this.close();
  }

  close(): void {
    this.closed = true;
    this.buffer = [];
    this.signal();
  }

  private signal(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  /** The next buffered event; null once closed; throws the failure. */
  async next(): Promise<StoredInboxEvent | null> {
    for (;;) {
      if (this.failure) throw this.failure;
      if (this.closed) return null;
      const event = this.buffer.shift();
      if (event) return event;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }
}

class UserChannel {
  readonly watchers = new Set<Watcher>();
  lastSeq = 0;
  ready: Promise<void> | null = null;
  initialised = false;
  dirty = false;
  reading = false;
  retry: NodeJS.Timeout | null = null;

  constructor(readonly userId: string) {}
}

/** Fans one user's inbox events out to its watchers, across replicas on one PostgreSQL. */
export class InboxHub {
  private readonly channels = new Map<string, UserChannel>();
  private readonly log: Logger;
  private readonly readPageSize: number;
  private readonly retryDelayMs: number;
  private listener: PgNotificationListener | null = null;
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly store: InboxStoreProtocol,
    private readonly options: InboxHubOptions,
  ) {
    this.log = (options.logger ?? silentLogger()).child({ component: 'inbox-hub' });
    this.readPageSize = options.readPageSize ?? 500;
    this.retryDelayMs = options.retryDelayMs ?? 1000;
  }

  /** Subscribes to local commits and, with a listen URL, to other replicas' NOTIFY. */
  async start(): Promise<void> {
    if (!this.unsubscribe)
      this.unsubscribe = this.store.onCommitted((userId, seq) => this.signal(userId, seq));
    if (this.options.listenUrl && !this.listener) {
      this.listener = new PgNotificationListener({
        url: this.options.listenUrl,
        channel: INBOX_EVENTS_CHANNEL,
        logger: this.log,
        applicationName: 'inbox-hub',
        onNotification: (payload) => this.onNotification(payload),
        // Notifications sent while the connection was down are lost: re-read every watched user.
        onReconnect: () => {
          for (const channel of this.channels.values()) this.markDirty(channel);
        },
      });
      await this.listener.start();
    }
  }

  /** Ends every watch (their iterators finish) and stops listening. */
  async stop(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = null;
    await this.listener?.stop();
    this.listener = null;
    for (const channel of this.channels.values()) {
      if (channel.retry) clearTimeout(channel.retry);
      for (const watcher of channel.watchers) watcher.close();
    }
    this.channels.clear();
  }

  /** Number of open watches, for metrics and tests. */
  get watcherCount(): number {
    let n = 0;
    for (const channel of this.channels.values()) n += channel.watchers.size;
    return n;
  }

  /** True while the cross-replica LISTEN connection is up (always false without a listen URL). */
  get listening(): boolean {
    return this.listener?.listening ?? false;
  }

  /**
   * One user's events: those after `options.after` from the store, then live ones. The cursor is
   * validated now (InvalidArgumentError), before anything is read.
   */
  watch(userId: string, options: WatchOptions = {}): AsyncIterable<InboxEvent> {
    const after = options.after === undefined || options.after === '' ? null : parseCursor(options.after);
    return this.iterate(userId, after, options.signal, options.onLive);
  }

  private async *iterate(
    userId: string,
    after: number | null,
    signal?: AbortSignal,
    onLive?: () => void,
  ): AsyncGenerator<InboxEvent> {
    if (signal?.aborted) return;
    const watcher = new Watcher(this.options.bufferSize);
    const channel = this.join(userId, watcher);
    const onAbort = () => watcher.close();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await channel.ready;
      let last = after ?? 0;
      if (after !== null) {
        for (;;) {
          watcher.lostDuringReplay = false;
          const page = await this.store.eventsAfter(userId, last, this.readPageSize);
          for (const event of page) {
            if (watcher.closed) break;
            last = event.seq;
            yield toInboxEvent(event);
          }
          if (watcher.closed) break;
          if (page.length === this.readPageSize || watcher.lostDuringReplay) continue;
          break;
        }
      }
      watcher.live = true;
      onLive?.();
      for (;;) {
        const event = await watcher.next();
        if (event === null) return;
        if (event.seq <= last) continue;
        last = event.seq;
        yield toInboxEvent(event);
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      watcher.close();
      this.leave(channel, watcher);
    }
  }

  private join(userId: string, watcher: Watcher): UserChannel {
    let channel = this.channels.get(userId);
    if (!channel) {
      const created = new UserChannel(userId);
      channel = created;
      this.channels.set(userId, created);
      created.ready = this.store.latestSeq(userId).then(
        (seq) => {
          created.lastSeq = seq;
          created.initialised = true;
          if (created.dirty) this.read(created);
        },
        (err: unknown) => {
          // The watchers waiting on this channel fail with the store's error; the next watch retries.
          if (this.channels.get(userId) === created) this.channels.delete(userId);
          for (const w of created.watchers) w.close();
          throw err;
        },
      );
    }
    channel.watchers.add(watcher);
    return channel;
  }

  private leave(channel: UserChannel, watcher: Watcher): void {
    channel.watchers.delete(watcher);
    if (channel.watchers.size === 0 && this.channels.get(channel.userId) === channel) {
      if (channel.retry) clearTimeout(channel.retry);
      this.channels.delete(channel.userId);
    }
  }

  private onNotification(payload: string): void {
    let parsed: { userId?: unknown; seq?: unknown };
    try {
      parsed = JSON.parse(payload) as { userId?: unknown; seq?: unknown };
    } catch {
      this.log.warn('ignoring a malformed inbox notification');
      return;
    }
    if (typeof parsed.userId === 'string' && typeof parsed.seq === 'number')
      this.signal(parsed.userId, parsed.seq);
  }

  /** A commit for `userId` up to `seq` happened somewhere. */
  private signal(userId: string, seq: number): void {
    const channel = this.channels.get(userId);
    if (!channel || (channel.initialised && seq <= channel.lastSeq)) return;
    this.markDirty(channel);
  }

  private markDirty(channel: UserChannel): void {
    channel.dirty = true;
    if (channel.initialised) this.read(channel);
  }

  /** Reads the user's events after the last delivered one until nothing new is signalled. */
  private read(channel: UserChannel): void {
    if (channel.reading || channel.retry) return;
    channel.reading = true;
    void (async () => {
      try {
        while (channel.dirty && channel.watchers.size > 0) {
          channel.dirty = false;
          let page: StoredInboxEvent[];
          do {
            page = await this.store.eventsAfter(channel.userId, channel.lastSeq, this.readPageSize);
            for (const event of page) {
              channel.lastSeq = event.seq;
              for (const watcher of channel.watchers) {
                if (!watcher.push(event)) this.leave(channel, watcher);
              }
            }
          } while (page.length === this.readPageSize && channel.watchers.size > 0);
        }
      } catch (err) {
        this.log.error({ err, userId: channel.userId }, 'reading inbox events failed; retrying');
        channel.dirty = true;
        channel.retry = setTimeout(() => {
          channel.retry = null;
          this.read(channel);
        }, this.retryDelayMs);
        channel.retry.unref();
      } finally {
        channel.reading = false;
      }
    })();
  }
}
