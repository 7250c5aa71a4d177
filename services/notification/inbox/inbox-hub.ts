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
 * Each watcher has a bounded buffer, and the hub reads at most what fits into it. A watcher whose
 * buffer is full when more arrives is not dropped: it is marked behind, its buffer is emptied
 * (everything is in the store) and its reader catches up from the store by itself, then carries on
 * from the buffer, skipping what it already delivered by seq: no gap, no duplicate, and a fast
 * reader is never closed by a burst. Only a watcher whose reader has truly stopped (it has not asked
 * for an event for `stallMs` while events were waiting for it) is removed, and its iterator throws
 * ResourceExhaustedError; it resumes with the last cursor it saw.
 *
 * A watch without a cursor starts with a `live` event carrying the current cursor; a watch whose
 * cursor is older than what retention kept (the store's purge horizon) gets a `reset` event telling
 * it to reload, then continues from the reset's cursor. Watchers are capped per user and in total.
 */
import { InvalidArgumentError, ResourceExhaustedError } from '../../../shared/errors';
import type { Logger } from '../../../shared/logging/logger';
import { silentLogger } from '../../../shared/logging/logger';
import { PgNotificationListener } from '../../../shared/storage/pg-listener';
import { INBOX_EVENTS_CHANNEL } from './database-store';
import type { InboxStoreProtocol, StoredInboxEvent } from './store';
import type { InboxEvent, WatchOptions } from './types';
import { BEHIND, CatchUpBuffer } from '../../../shared/streams/catch-up-buffer';

/** Options of InboxHub. */
export interface InboxHubOptions {
  /** Events buffered per watcher (inbox.watch_buffer_size). */
  bufferSize: number;
  /** Open watches in this process, all users together (inbox.max_watchers; default 10,000). */
  maxWatchers?: number;
  /**
   * Open watches of one user in this process, per watching party (inbox.max_watchers_per_user;
   * default 16): the user's own sessions (the admin page) and each API caller have a share each, so
   * no service can lock a user out of their own page.
   */
  maxWatchersPerUser?: number;
  /**
   * How long a watcher with events waiting may go without asking for one before it is closed with
   * ResourceExhaustedError (inbox.watch_stall_seconds; default 10 s).
   */
  stallMs?: number;
  logger?: Logger;
  /** PostgreSQL URL to LISTEN on, so commits of other replicas arrive; omit for one process. */
  listenUrl?: string;
  /** Interval of the LISTEN connection's ping (default 30 s). */
  listenPingMs?: number;
  /** Events read from the store per query (default 500; never more than a buffer holds). */
  readPageSize?: number;
  /** Delay before retrying a failed store read for a watched user (default 1000 ms). */
  retryDelayMs?: number;
  /** Milliseconds clock for the stall rule (tests inject one). */
  now?: () => number;
}

/** The watching party of a watch that names none: the user's own sessions. */
const OWN_SESSIONS = 'self';

/** Default of InboxHubOptions.maxWatchers. */
export const DEFAULT_MAX_WATCHERS = 10_000;
/** Default of InboxHubOptions.maxWatchersPerUser. */
export const DEFAULT_MAX_WATCHERS_PER_USER = 16;
/** Default of InboxHubOptions.stallMs. */
export const DEFAULT_STALL_MS = 10_000;

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

/** One open watch: the shared catch-up buffer, and where a watch without a cursor starts. */
class Watcher extends CatchUpBuffer<StoredInboxEvent> {
  /** The channel's seq when this watcher joined: where a watch without a cursor starts. */
  startSeq = 0;

  constructor(
    capacity: number,
    now: number,
    /** Who watches (WatchOptions.party): the per-user cap counts each party apart. */
    readonly party: string,
  ) {
    super(capacity, now, 'inbox watcher stopped reading; resume from the last cursor');
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
  private readonly maxWatchers: number;
  private readonly maxWatchersPerUser: number;
  private readonly stallMs: number;
  private readonly now: () => number;
  private total = 0;
  private listener: PgNotificationListener | null = null;
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly store: InboxStoreProtocol,
    private readonly options: InboxHubOptions,
  ) {
    this.log = (options.logger ?? silentLogger()).child({ component: 'inbox-hub' });
    // Never read more than one buffer holds: a burst must not overflow a reader that keeps up.
    this.readPageSize = Math.max(1, Math.min(options.readPageSize ?? 500, options.bufferSize));
    this.retryDelayMs = options.retryDelayMs ?? 1000;
    this.maxWatchers = options.maxWatchers ?? DEFAULT_MAX_WATCHERS;
    this.maxWatchersPerUser = options.maxWatchersPerUser ?? DEFAULT_MAX_WATCHERS_PER_USER;
    this.stallMs = options.stallMs ?? DEFAULT_STALL_MS;
    this.now = options.now ?? Date.now;
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
        pingIntervalMs: this.options.listenPingMs,
        onNotification: (payload) => this.onNotification(payload),
        // Notifications sent while no connection listened are lost (before the first connect too):
        // re-read every watched user after every successful connect.
        onConnect: () => {
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
    this.total = 0;
  }

  /** Number of open watches, for metrics and tests. */
  get watcherCount(): number {
    return this.total;
  }

  /** True while the cross-replica LISTEN connection is up (always false without a listen URL). */
  get listening(): boolean {
    return this.listener?.listening ?? false;
  }

  /**
   * One user's events: those after `options.after` from the store, then live ones. The cursor and
   * the watcher caps are checked now (InvalidArgumentError, ResourceExhaustedError), before anything
   * is read; the watch holds its place once iteration starts.
   */
  watch(userId: string, options: WatchOptions = {}): AsyncIterable<InboxEvent> {
    const after = options.after === undefined || options.after === '' ? null : parseCursor(options.after);
    const party = options.party ?? OWN_SESSIONS;
    this.admit(userId, party);
    return this.iterate(userId, party, after, options.signal, options.onLive);
  }

  private admit(userId: string, party: string): void {
    if (this.total >= this.maxWatchers) {
      throw new ResourceExhaustedError('too many open inbox watches on this server; retry later');
    }
    let open = 0;
    for (const w of this.channels.get(userId)?.watchers ?? []) if (w.party === party) open++;
    if (open >= this.maxWatchersPerUser) {
      throw new ResourceExhaustedError('too many open inbox watches for this user; close one first');
    }
  }

  private async *iterate(
    userId: string,
    party: string,
    after: number | null,
    signal?: AbortSignal,
    onLive?: () => void,
  ): AsyncGenerator<InboxEvent> {
    if (signal?.aborted) return;
    // Checked again: iteration may start later than watch() was called.
    this.admit(userId, party);
    const watcher = new Watcher(this.options.bufferSize, this.now(), party);
    const channel = this.join(userId, watcher);
    const onAbort = () => watcher.close();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await channel.ready;
      let last: number;
      let live = false;
      if (after === null) {
        last = watcher.startSeq;
        const unreadCount = await this.store.countUnread(userId);
        if (watcher.closed) return;
        live = true;
        onLive?.();
        yield { cursor: String(last), type: 'live', userId, unreadCount, occurredAt: new Date() };
      } else {
        last = after;
        watcher.behind = true;
      }
      for (;;) {
        const next = await watcher.next(this.now);
        if (next === null) return;
        if (next === BEHIND) {
          watcher.behind = false;
          const page = await this.store.eventsAfter(userId, last, this.readPageSize);
          // Read after the page: a horizon past our cursor means events we never saw were purged.
          const horizon = await this.store.purgedThrough(userId);
          if (horizon > last) {
            const [latest, unreadCount] = await Promise.all([
              this.store.latestSeq(userId),
              this.store.countUnread(userId),
            ]);
            // Never below the horizon, or the next read would reset again.
            last = Math.max(latest, horizon, last);
            watcher.behind = true;
            if (watcher.closed) return;
            yield { cursor: String(last), type: 'reset', userId, unreadCount, occurredAt: new Date() };
            continue;
          }
          for (const event of page) {
            if (watcher.closed) return;
            if (event.seq <= last) continue;
            last = event.seq;
            yield toInboxEvent(event);
          }
          if (page.length === this.readPageSize) watcher.behind = true;
          else if (!live) {
            live = true;
            onLive?.();
          }
          continue;
        }
        if (next.seq <= last) continue;
        last = next.seq;
        yield toInboxEvent(next);
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
          for (const w of created.watchers) w.startSeq = seq;
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
    if (channel.initialised) watcher.startSeq = channel.lastSeq;
    channel.watchers.add(watcher);
    this.total++;
    return channel;
  }

  private leave(channel: UserChannel, watcher: Watcher): void {
    if (channel.watchers.delete(watcher)) this.total--;
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

  /**
   * Events per read: what the emptiest buffer can take; the readers that cannot take it all catch up
   * from the store. When every reader is catching up, the channel only moves its position on.
   */
  private pageLimit(channel: UserChannel): number {
    let room = 0;
    for (const watcher of channel.watchers) room = Math.max(room, watcher.room);
    return room === 0 ? this.readPageSize : Math.min(this.readPageSize, room);
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
          let limit: number;
          do {
            limit = this.pageLimit(channel);
            page = await this.store.eventsAfter(channel.userId, channel.lastSeq, limit);
            const now = this.now();
            for (const event of page) {
              channel.lastSeq = event.seq;
              for (const watcher of channel.watchers) {
                if (!watcher.push(event, now, this.stallMs)) this.leave(channel, watcher);
              }
            }
          } while (page.length === limit && channel.watchers.size > 0);
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
