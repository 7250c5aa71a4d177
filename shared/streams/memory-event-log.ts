/**
 * MemoryEventLog: the event-log port kept in memory, for a stream whose state has no database (the
 * monitor's alerts today) and for tests. Each channel keeps its newest `capacity` events; what falls
 * out, or is erased, moves the channel's horizon, so a cursor from before it gets the hub's `reset`.
 * One process only: no NOTIFY, the hub hears appends through `onAppended`.
 */
import type { EventLog, LoggedEvent } from './live-hub';

/** One event of a MemoryEventLog: its seq and what was appended. */
export interface MemoryLogEvent<T> extends LoggedEvent {
  readonly value: T;
}

interface ChannelLog<T> {
  events: MemoryLogEvent<T>[];
  latest: number;
  horizon: number;
}

/** A bounded in-memory event log, by channel; every watcher of a channel wants all its events. */
export class MemoryEventLog<T> implements EventLog<MemoryLogEvent<T>, unknown> {
  private readonly channels = new Map<string, ChannelLog<T>>();
  private readonly listeners = new Set<(channel: string, seq: number) => void>();

  private readonly before: number;

  /**
   * `firstSeq` (default 1): the seq of a channel's first event. A log that starts afresh with its
   * process and whose cursors outlive it (a client resumes after a restart, or on another replica)
   * starts past every seq an earlier log handed out (`epochFirstSeq`): a cursor of the earlier log is
   * then older than the horizon and gets a `reset`, never a replay of other events under its numbers.
   */
  constructor(
    private readonly capacity: number,
    options: { firstSeq?: number } = {},
  ) {
    if (!(capacity >= 1)) throw new RangeError('MemoryEventLog capacity must be at least 1');
    const first = options.firstSeq ?? 1;
    if (!Number.isSafeInteger(first) || first < 1)
      throw new RangeError('MemoryEventLog firstSeq must be >= 1');
    this.before = first - 1;
  }

  private channel(key: string): ChannelLog<T> {
    let log = this.channels.get(key);
    if (!log) this.channels.set(key, (log = { events: [], latest: this.before, horizon: this.before }));
    return log;
  }

  /** Appends an event (the change it records is already made) and tells the hub; returns its seq. */
  append(channel: string, value: T): number {
    const log = this.channel(channel);
    const seq = ++log.latest;
    log.events.push({ seq, value });
    if (log.events.length > this.capacity) {
      const dropped = log.events.splice(0, log.events.length - this.capacity);
      log.horizon = dropped[dropped.length - 1]!.seq;
    }
    for (const listener of this.listeners) listener(channel, seq);
    return seq;
  }

  /**
   * Erases a channel's events whose content `matches` (deleted content leaves no copy in the log).
   * The horizon moves past the last erased one: a reader from before it reloads (a `reset`).
   */
  erase(channel: string, matches: (value: T) => boolean): void {
    const log = this.channels.get(channel);
    if (!log) return;
    let erased = 0;
    log.events = log.events.filter((e) => {
      if (!matches(e.value)) return true;
      erased = Math.max(erased, e.seq);
      return false;
    });
    log.horizon = Math.max(log.horizon, erased);
  }

  /** The newest events of a channel, oldest first (at most `limit`). */
  recent(channel: string, limit: number): MemoryLogEvent<T>[] {
    const events = this.channels.get(channel)?.events ?? [];
    return events.slice(Math.max(0, events.length - limit));
  }

  // A channel with no event yet answers `firstSeq - 1` for both, as a written one would: a watch
  // opened on it starts live there (its first event is then news, not a gap), and an earlier log's
  // cursor is below its horizon.
  async latestSeq(channel: string): Promise<number> {
    return this.channels.get(channel)?.latest ?? this.before;
  }

  async readChannel(channel: string, after: number, limit: number): Promise<MemoryLogEvent<T>[]> {
    return this.after(channel, after, limit);
  }

  async readWatch(
    channel: string,
    _watch: unknown,
    after: number,
    limit: number,
  ): Promise<MemoryLogEvent<T>[]> {
    return this.after(channel, after, limit);
  }

  async horizon(channel: string): Promise<number> {
    return this.channels.get(channel)?.horizon ?? this.before;
  }

  onAppended(listener: (channel: string, seq: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private after(channel: string, after: number, limit: number): MemoryLogEvent<T>[] {
    const out: MemoryLogEvent<T>[] = [];
    for (const event of this.channels.get(channel)?.events ?? []) {
      if (event.seq <= after) continue;
      out.push(event);
      if (out.length >= limit) break;
    }
    return out;
  }
}

/**
 * A first seq later than any an earlier log of this kind handed out: milliseconds since the epoch
 * times 100 (a log started a millisecond later starts 100 seqs later; 15 digits, the cursor rule's
 * bound, last until the year 2286).
 */
export function epochFirstSeq(nowMs: number): number {
  return Math.max(1, Math.floor(nowMs) * 100 + 1);
}
