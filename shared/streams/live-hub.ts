/**
 * LiveHub: the one live-stream hub (WatchInbox and the admin SSE, WatchDeliveries). It serves every
 * watcher of a stream over the stream's event log (the EventLog port a store implements):
 *
 * - Events always come from the log, never from memory alone. A local commit (`log.onAppended`) or a
 *   NOTIFY from another replica (the NotifyFeed the composition root hands in) only says "channel C
 *   reaches seq S"; the hub then reads that channel's events after the last seq it read, one read at a
 *   time per channel, and only for channels somebody watches. A log's seqs grow in commit order per
 *   channel, so reading "after the last seq" never skips an event, whichever replica wrote it.
 * - A watch without a cursor starts with a `live` frame carrying the current cursor; a watch after a
 *   cursor replays from the log, then carries on live: no gap, no duplicate (by seq). A cursor older
 *   than the log's horizon for the watch (what retention or erasure removed) gets a `reset` frame,
 *   never a silent jump, then continues from the reset's cursor; so does a cursor past the log's
 *   newest seq (never handed out by this log: made up, or from a wiped database), at the newest seq.
 * - Each watcher has a bounded buffer (CatchUpBuffer) and the hub reads at most what the emptiest one
 *   can take. A full buffer marks its watcher behind (emptied: everything is in the log) and its reader
 *   catches up from the log by itself; only a reader that has not asked for an event for `stallMs`
 *   while events waited is closed with ResourceExhaustedError (it resumes from its last cursor).
 * - Watches are capped in total and per cap key (a user and party, a caller). stop() ends every watch:
 *   their iterators finish.
 */
import { type Clock, systemClock } from '../runtime/clock';
import { ResourceExhaustedError } from '../errors';
import type { Logger } from '../logging/logger';
import { silentLogger } from '../logging/logger';
import { BEHIND, CatchUpBuffer, type OverflowRule } from './catch-up-buffer';
import { parseStreamCursor, type CursorField } from './cursor';
import type { NotifyFeed } from './notify-feed';

/** An event of a log: `seq` orders it within its channel. */
export interface LoggedEvent {
  readonly seq: number;
}

/**
 * The event-log port, as the hub reads it. The store appends events in the transaction of the change
 * they record and erases their content with the content itself (its own methods); the hub reads.
 * A log is split into channels (the inbox: one per user; deliveries: one for the whole log); a watch
 * `W` says what one watcher wants of its channel (a caller's scope and filter, say).
 */
export interface EventLog<E extends LoggedEvent, W> {
  /** The channel's newest seq, kept or erased (never below the horizon); 0 when none. */
  latestSeq(channel: string): Promise<number>;
  /** The hub's shared read: the channel's events after `after`, oldest first, at most `limit`; it may return events no watch wants. */
  readChannel(channel: string, after: number, limit: number, watches: readonly W[]): Promise<E[]>;
  /** One watcher's catch-up read: the events it wants after `after`, oldest first, at most `limit`. */
  readWatch(channel: string, watch: W, after: number, limit: number): Promise<E[]>;
  /** The highest seq the log no longer holds for this watch (0 when nothing was removed). */
  horizon(channel: string, watch: W): Promise<number>;
  /** Whether a watcher wants an event of its channel (default: every event). */
  matches?(watch: W, event: E): boolean;
  /** Local appends: called with the channel and its new newest seq; returns unsubscribe. */
  onAppended(listener: (channel: string, seq: number) => void): () => void;
}

/** One frame of a watch: a logged event, or `live` / `reset` (the stream's own, with the cursor). */
export type LiveFrame<E> = { type: 'event'; seq: number; event: E } | { type: 'live' | 'reset'; seq: number };

/** Cross-replica signals of one stream: the feed, its channel, and how to read a payload. */
export interface LiveHubNotifications {
  feed: NotifyFeed;
  /** The NOTIFY channel the store's commits send on. */
  channel: string;
  /** A payload as "log channel reaches seq"; null when malformed (logged and ignored). */
  parse(payload: string): { channel: string; seq: number } | null;
}

/** Options of LiveHub: one stream's numbers and words. */
export interface LiveHubOptions {
  /** Events buffered per watcher. */
  bufferSize: number;
  /** Events read from the log per query (default 500; never more than a buffer holds). */
  readPageSize?: number;
  /** Open watches in this process. */
  maxWatchers: number;
  /** Open watches of one cap key in this process. */
  maxWatchersPerKey: number;
  /** How long a watcher with events waiting may go without asking for one. */
  stallMs: number;
  /** A full buffer: its reader catches up from the log (default), or is closed at once (`close`). */
  overflow?: OverflowRule;
  /** Delay before retrying a failed log read (default 1000 ms). */
  retryDelayMs?: number;
  /** The clock of the stall rule (its monotonic milliseconds; tests inject one). */
  clock?: Clock;
  logger?: Logger;
  /** The logger's `component`. */
  component: string;
  /** The stream's cursor field, for the error of a malformed one. */
  cursor: CursorField;
  /** What callers are told: a full server, a full cap key, a stalled reader. */
  messages: { tooManyWatches: string; tooManyForKey: string; stalled: string };
  /** Other replicas' commits; omit for one process. */
  notifications?: LiveHubNotifications;
}

/** What one watch asks for. */
export interface LiveWatchOptions<W> {
  /** The log channel. */
  channel: string;
  /** What this watcher wants of the channel. */
  watch: W;
  /** Counted against `maxWatchersPerKey`. */
  capKey: string;
  /** Resume after this cursor; absent or empty: start live. */
  after?: string;
  /** Ends the watch (its iterator finishes). */
  signal?: AbortSignal;
  /** Called once the watch is live: before the `live` frame, or when a replay has caught up. */
  onLive?: () => void;
}

class Watcher<E, W> extends CatchUpBuffer<E> {
  /** The channel's seq when this watcher joined: where a watch without a cursor starts. */
  startSeq = 0;

  constructor(
    readonly watch: W,
    readonly capKey: string,
    capacity: number,
    now: number,
    stalledMessage: string,
    overflow: OverflowRule | undefined,
  ) {
    super(capacity, now, stalledMessage, overflow);
  }
}

class Channel<E, W> {
  readonly watchers = new Set<Watcher<E, W>>();
  lastSeq = 0;
  ready: Promise<void> | null = null;
  initialised = false;
  dirty = false;
  reading = false;
  retry: NodeJS.Timeout | null = null;
  /** The read under way (see `flushed`). */
  loop: Promise<void> | null = null;

  constructor(readonly key: string) {}
}

/** Fans a log's events out to its watchers, across replicas on one PostgreSQL (see the file comment). */
export class LiveHub<E extends LoggedEvent, W> {
  private readonly channels = new Map<string, Channel<E, W>>();
  private readonly perKey = new Map<string, number>();
  private readonly log: Logger;
  private readonly readPageSize: number;
  private readonly now: () => number;
  private total = 0;
  private unsubscribe: (() => void)[] = [];
  /** Set by stop(): what a watch that starts afterwards ends with (null: it just finishes). */
  private stoppedWith: Error | null | undefined;

  constructor(
    private readonly events: EventLog<E, W>,
    private readonly options: LiveHubOptions,
  ) {
    this.log = (options.logger ?? silentLogger()).child({ component: options.component });
    // Never read more than one buffer holds: a burst must not overflow a reader that keeps up.
    this.readPageSize = Math.max(1, Math.min(options.readPageSize ?? 500, options.bufferSize));
    const clock = options.clock ?? systemClock;
    this.now = () => clock.monotonic();
  }

  /** Subscribes to local appends and, with notifications, to other replicas' commits. */
  start(): void {
    this.stoppedWith = undefined;
    if (this.unsubscribe.length > 0) return;
    this.unsubscribe.push(this.events.onAppended((channel, seq) => this.signal(channel, seq)));
    const notifications = this.options.notifications;
    if (notifications) {
      this.unsubscribe.push(
        notifications.feed.subscribe(notifications.channel, {
          onNotification: (payload) => {
            const parsed = notifications.parse(payload);
            if (parsed) this.signal(parsed.channel, parsed.seq);
            else this.log.warn({ channel: notifications.channel }, 'ignoring a malformed notification');
          },
          // Notifications sent while no connection listened are lost; the log is not: read it again.
          onConnect: () => this.markAllDirty(),
        }),
      );
    }
  }

  /**
   * Ends every watch and stops listening: their iterators finish, or throw `failure` when one is
   * given (a stream that tells its clients to reconnect elsewhere).
   */
  stop(failure?: Error): void {
    this.stoppedWith = failure ?? null;
    for (const unsubscribe of this.unsubscribe.splice(0)) unsubscribe();
    for (const channel of this.channels.values()) {
      if (channel.retry) clearTimeout(channel.retry);
      for (const watcher of channel.watchers) {
        if (failure) watcher.fail(failure);
        else watcher.close();
      }
      channel.watchers.clear();
    }
    this.channels.clear();
    this.perKey.clear();
    this.total = 0;
  }

  /** Open watches in this process. */
  get watcherCount(): number {
    return this.total;
  }

  /** True while the cross-replica feed is listening (always false without one). */
  get listening(): boolean {
    return this.options.notifications?.feed.listening ?? false;
  }

  /**
   * One watcher's frames: the events after `after` from the log, then live ones. The cursor and the
   * caps are checked now (InvalidArgumentError, ResourceExhaustedError), before anything is read.
   */
  watch(options: LiveWatchOptions<W>): AsyncIterable<LiveFrame<E>> {
    const after = parseStreamCursor(options.after, this.options.cursor);
    this.admit(options.capKey);
    return this.iterate(options, after);
  }

  /**
   * Resolves once the channel's watchers have been offered everything signalled so far (its read is
   * idle): a log that appends in memory lets its writer answer only after the fan-out.
   */
  async flushed(key: string): Promise<void> {
    for (;;) {
      const channel = this.channels.get(key);
      if (!channel) return;
      try {
        await channel.ready;
      } catch {
        return;
      }
      if (!channel.loop) return;
      await channel.loop;
    }
  }

  /** Something may have been appended to any channel: re-read every watched one. */
  markAllDirty(): void {
    for (const channel of this.channels.values()) this.markDirty(channel);
  }

  private admit(capKey: string): void {
    if (this.total >= this.options.maxWatchers) {
      throw new ResourceExhaustedError(this.options.messages.tooManyWatches);
    }
    if ((this.perKey.get(capKey) ?? 0) >= this.options.maxWatchersPerKey) {
      throw new ResourceExhaustedError(this.options.messages.tooManyForKey);
    }
  }

  private async *iterate(options: LiveWatchOptions<W>, after: number | null): AsyncGenerator<LiveFrame<E>> {
    const { signal, onLive, watch } = options;
    if (signal?.aborted) return;
    // A stopped hub hears nothing more: a watch that starts now ends as the open ones did.
    if (this.stoppedWith) throw this.stoppedWith;
    if (this.stoppedWith === null) return;
    // Checked again: iteration may start later than watch() was called.
    this.admit(options.capKey);
    const watcher = new Watcher<E, W>(
      watch,
      options.capKey,
      this.options.bufferSize,
      this.now(),
      this.options.messages.stalled,
      this.options.overflow,
    );
    const channel = this.join(options.channel, watcher);
    const onAbort = () => watcher.close();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await channel.ready;
      let last: number;
      let live = false;
      if (after === null) {
        last = watcher.startSeq;
        if (watcher.closed) return;
        live = true;
        onLive?.();
        yield { type: 'live', seq: last };
      } else {
        last = after;
        watcher.behind = true;
        // A cursor past the channel's newest seq was never handed out by this log (made up, or kept
        // from a database since wiped or a user since erased). Replaying "after" it would skip in
        // silence every event up to it: a reset at the newest seq says so, then the watch goes on.
        const latest = await this.events.latestSeq(channel.key);
        if (after > latest) {
          last = latest;
          if (watcher.closed) return;
          yield { type: 'reset', seq: latest };
        }
      }
      for (;;) {
        const next = await watcher.next(this.now);
        if (next === null) return;
        if (next === BEHIND) {
          watcher.behind = false;
          const page = await this.events.readWatch(channel.key, watch, last, this.readPageSize);
          // Read after the page: a horizon past our cursor means events we never saw were removed.
          const horizon = await this.events.horizon(channel.key, watch);
          if (horizon > last) {
            const latest = await this.events.latestSeq(channel.key);
            // Never below the horizon, or the next read would reset again.
            last = Math.max(latest, horizon, last);
            watcher.behind = true;
            if (watcher.closed) return;
            yield { type: 'reset', seq: last };
            continue;
          }
          for (const event of page) {
            if (watcher.closed) return;
            if (event.seq <= last) continue;
            last = event.seq;
            yield { type: 'event', seq: event.seq, event };
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
        yield { type: 'event', seq: next.seq, event: next };
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      watcher.close();
      this.leave(channel, watcher);
    }
  }

  private join(key: string, watcher: Watcher<E, W>): Channel<E, W> {
    let channel = this.channels.get(key);
    if (!channel) {
      // A channel nobody watched was not read: it starts at the log's current end.
      const created = new Channel<E, W>(key);
      channel = created;
      this.channels.set(key, created);
      created.ready = this.events.latestSeq(key).then(
        (seq) => {
          created.lastSeq = seq;
          created.initialised = true;
          for (const w of created.watchers) w.startSeq = seq;
          if (created.dirty) this.read(created);
        },
        (err: unknown) => {
          // The watchers waiting on this channel fail with the log's error; the next watch retries.
          if (this.channels.get(key) === created) this.channels.delete(key);
          for (const w of created.watchers) w.close();
          throw err;
        },
      );
    }
    if (channel.initialised) watcher.startSeq = channel.lastSeq;
    channel.watchers.add(watcher);
    this.perKey.set(watcher.capKey, (this.perKey.get(watcher.capKey) ?? 0) + 1);
    this.total++;
    return channel;
  }

  private leave(channel: Channel<E, W>, watcher: Watcher<E, W>): void {
    if (channel.watchers.delete(watcher)) {
      this.total--;
      const open = (this.perKey.get(watcher.capKey) ?? 1) - 1;
      if (open > 0) this.perKey.set(watcher.capKey, open);
      else this.perKey.delete(watcher.capKey);
    }
    if (channel.watchers.size === 0 && this.channels.get(channel.key) === channel) {
      if (channel.retry) clearTimeout(channel.retry);
      this.channels.delete(channel.key);
    }
  }

  /** The log of `key` reaches `seq` (somewhere). */
  signal(key: string, seq: number): void {
    const channel = this.channels.get(key);
    if (!channel || (channel.initialised && seq <= channel.lastSeq)) return;
    this.markDirty(channel);
  }

  private markDirty(channel: Channel<E, W>): void {
    channel.dirty = true;
    if (channel.initialised) this.read(channel);
  }

  /**
   * Events per read: what the emptiest buffer can take; the readers that cannot take it all catch up
   * from the log. When every reader is catching up, the channel only moves its position on.
   */
  private pageLimit(channel: Channel<E, W>): number {
    let room = 0;
    for (const watcher of channel.watchers) room = Math.max(room, watcher.room);
    return room === 0 ? this.readPageSize : Math.min(this.readPageSize, room);
  }

  /** Reads the channel's events after the last one read until nothing new is signalled. */
  private read(channel: Channel<E, W>): void {
    if (channel.reading || channel.retry) return;
    channel.reading = true;
    const matches = this.events.matches?.bind(this.events);
    const loop = (async () => {
      try {
        while (channel.dirty && channel.watchers.size > 0) {
          channel.dirty = false;
          let page: E[];
          let limit: number;
          do {
            limit = this.pageLimit(channel);
            const watches = [...channel.watchers].map((w) => w.watch);
            page = await this.events.readChannel(channel.key, channel.lastSeq, limit, watches);
            const now = this.now();
            for (const event of page) {
              if (event.seq <= channel.lastSeq) continue;
              channel.lastSeq = event.seq;
              for (const watcher of channel.watchers) {
                if (matches && !matches(watcher.watch, event)) continue;
                if (!watcher.push(event, now, this.options.stallMs)) this.leave(channel, watcher);
              }
            }
          } while (page.length === limit && channel.watchers.size > 0);
        }
      } catch (err) {
        this.log.error({ err, channel: channel.key }, 'reading stream events failed; retrying');
        channel.dirty = true;
        channel.retry = setTimeout(() => {
          channel.retry = null;
          this.read(channel);
        }, this.options.retryDelayMs ?? 1000);
        channel.retry.unref();
      } finally {
        channel.reading = false;
        channel.loop = null;
      }
    })();
    // A read that found nothing to do has already ended.
    if (channel.reading) channel.loop = loop;
  }
}
