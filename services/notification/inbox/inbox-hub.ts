/**
 * InboxHub: live inbox events per user, for WatchInbox, server-sent events and in-process listeners.
 * It is the one live-stream hub (shared/streams/live-hub.ts) configured for the inbox: the log is
 * the store's event log, one channel per user (a user's events commit in seq order, under the
 * store's per-user advisory lock), and other replicas' commits arrive as NOTIFY `inbox_events` on the
 * feed the composition root hands in. The hub's rules (replay then live, bounded buffers, caught up
 * from the log, the stall rule, the reset past the purge horizon) are described there.
 *
 * What the inbox adds: a watch without a cursor starts with a `live` event carrying the current
 * cursor and the unread count, a `reset` carries the unread count too, and watchers are capped per
 * user and watching party (the user's own sessions, each API caller) and in total.
 */
import type { Clock } from '../../../shared/runtime/clock';
import { InvalidArgumentError } from '../../../shared/errors';
import type { Logger } from '../../../shared/logging/logger';
import { parseStreamCursor, type CursorField } from '../../../shared/streams/cursor';
import { LiveHub, type EventLog, type LiveFrame } from '../../../shared/streams/live-hub';
import type { NotifyFeed } from '../../../shared/streams/notify-feed';
import { INBOX_EVENTS_CHANNEL } from './database-store';
import type { InboxStoreProtocol, StoredInboxEvent } from './store';
import type { InboxEvent, WatchOptions } from './types';

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
  /** The service's LISTEN feed (opened by the composition root), so commits of other replicas arrive; omit for one process. */
  notifications?: NotifyFeed;
  /** Events read from the store per query (default 500; never more than a buffer holds). */
  readPageSize?: number;
  /** Delay before retrying a failed store read for a watched user (default 1000 ms). */
  retryDelayMs?: number;
  /** The clock of the stall rule (tests inject one). */
  clock?: Clock;
}

/** The watching party of a watch that names none: the user's own sessions. */
const OWN_SESSIONS = 'self';

/** Default of InboxHubOptions.maxWatchers. */
export const DEFAULT_MAX_WATCHERS = 10_000;
/** Default of InboxHubOptions.maxWatchersPerUser. */
export const DEFAULT_MAX_WATCHERS_PER_USER = 16;
/** Default of InboxHubOptions.stallMs. */
export const DEFAULT_STALL_MS = 10_000;

const INBOX_CURSOR: CursorField = { field: 'cursor', message: 'cursor is not a valid inbox cursor' };

/** Parses a WatchInbox resume cursor; a malformed one is InvalidArgumentError. */
export function parseCursor(cursor: string): number {
  const seq = parseStreamCursor(cursor, INBOX_CURSOR);
  if (seq === null) throw new InvalidArgumentError(INBOX_CURSOR.message, INBOX_CURSOR.field);
  return seq;
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

/** The inbox store as the hub's event log: one channel per user, every watcher wants every event. */
function inboxEventLog(store: InboxStoreProtocol): EventLog<StoredInboxEvent, null> {
  return {
    latestSeq: (userId) => store.latestSeq(userId),
    readChannel: (userId, after, limit) => store.eventsAfter(userId, after, limit),
    readWatch: (userId, _watch, after, limit) => store.eventsAfter(userId, after, limit),
    horizon: (userId) => store.purgedThrough(userId),
    onAppended: (listener) => store.onCommitted(listener),
  };
}

/** Reads an `inbox_events` payload (`{userId, seq}`). */
function parseNotification(payload: string): { channel: string; seq: number } | null {
  try {
    const parsed = JSON.parse(payload) as { userId?: unknown; seq?: unknown };
    if (typeof parsed.userId === 'string' && typeof parsed.seq === 'number')
      return { channel: parsed.userId, seq: parsed.seq };
  } catch {
    // Malformed: the hub logs it.
  }
  return null;
}

/** Fans one user's inbox events out to its watchers, across replicas on one PostgreSQL. */
export class InboxHub {
  private readonly hub: LiveHub<StoredInboxEvent, null>;

  constructor(
    private readonly store: InboxStoreProtocol,
    options: InboxHubOptions,
  ) {
    this.hub = new LiveHub(inboxEventLog(store), {
      bufferSize: options.bufferSize,
      readPageSize: options.readPageSize,
      maxWatchers: options.maxWatchers ?? DEFAULT_MAX_WATCHERS,
      maxWatchersPerKey: options.maxWatchersPerUser ?? DEFAULT_MAX_WATCHERS_PER_USER,
      stallMs: options.stallMs ?? DEFAULT_STALL_MS,
      retryDelayMs: options.retryDelayMs,
      clock: options.clock,
      logger: options.logger,
      component: 'inbox-hub',
      cursor: INBOX_CURSOR,
      messages: {
        tooManyWatches: 'too many open inbox watches on this server; retry later',
        tooManyForKey: 'too many open inbox watches for this user; close one first',
        stalled: 'inbox watcher stopped reading; resume from the last cursor',
      },
      notifications: options.notifications && {
        feed: options.notifications,
        channel: INBOX_EVENTS_CHANNEL,
        parse: parseNotification,
      },
    });
  }

  /** Subscribes to local commits and, with a feed, to other replicas' NOTIFY. */
  async start(): Promise<void> {
    this.hub.start();
  }

  /** Ends every watch (their iterators finish) and stops listening. */
  async stop(): Promise<void> {
    this.hub.stop();
  }

  /** Number of open watches, for metrics and tests. */
  get watcherCount(): number {
    return this.hub.watcherCount;
  }

  /** True while the cross-replica LISTEN connection is up (always false without a feed). */
  get listening(): boolean {
    return this.hub.listening;
  }

  /**
   * One user's events: those after `options.after` from the store, then live ones. The cursor and
   * the watcher caps are checked now (InvalidArgumentError, ResourceExhaustedError), before anything
   * is read; the watch holds its place once iteration starts.
   */
  watch(userId: string, options: WatchOptions = {}): AsyncIterable<InboxEvent> {
    const frames = this.hub.watch({
      channel: userId,
      watch: null,
      // The per-user cap counts each watching party apart.
      capKey: `${userId}\u0000${options.party ?? OWN_SESSIONS}`,
      after: options.after,
      signal: options.signal,
      onLive: options.onLive,
    });
    return this.toEvents(userId, frames);
  }

  private async *toEvents(
    userId: string,
    frames: AsyncIterable<LiveFrame<StoredInboxEvent>>,
  ): AsyncGenerator<InboxEvent> {
    for await (const frame of frames) {
      if (frame.type === 'event') yield toInboxEvent(frame.event);
      else {
        const unreadCount = await this.store.countUnread(userId);
        yield { cursor: String(frame.seq), type: frame.type, userId, unreadCount, occurredAt: new Date() };
      }
    }
  }
}
