/**
 * DeliveryWatchHub: live delivery status changes per caller, for WatchDeliveries. The rules are
 * WatchInbox's (inbox/inbox-hub.ts, inbox/README.md), applied to the delivery event log (events.ts):
 *
 * - Events always come from the store's log, never from memory alone. A sequencer pass in this process
 *   (`store.onEventsSequenced`) or on another replica (PostgreSQL NOTIFY `delivery_events`, payload the
 *   latest seq) only says "the log reaches seq S"; the hub then reads the watched callers' events after
 *   the last seq it read, one read at a time, and only while somebody watches. The log's seqs are
 *   gap-free in commit order (the sequencer), so "after the last seq" never skips an event.
 * - A watch without a cursor starts with a `live` frame carrying the current cursor; a watch after a
 *   cursor replays from the store, then carries on live, no gap, no duplicate (by seq); a cursor older
 *   than what retention kept in the caller's scope (the store's horizon) gets a `reset` frame.
 * - Each watcher has a bounded buffer and the hub reads at most what the emptiest one can take. A full
 *   buffer marks its watcher behind (emptied: everything is in the store) and its reader catches up
 *   from the store on its own; only a reader that has not asked for an event for `stallMs` while events
 *   waited for it is closed with ResourceExhaustedError. Watches are capped per caller and in total.
 */
import { InvalidArgumentError, ResourceExhaustedError } from '../../../shared/errors';
import type { Logger } from '../../../shared/logging/logger';
import { silentLogger } from '../../../shared/logging/logger';
import { PgNotificationListener } from '../../../shared/storage/pg-listener';
import type { DeliveryConfig } from './config';
import { DELIVERY_EVENTS_CHANNEL } from './database-store';
import { matchesEventFilter, type DeliveryEvent, type DeliveryEventFilter } from './events';
import type { DeliveryStore } from './store';
import { BEHIND, CatchUpBuffer } from '../../../shared/streams/catch-up-buffer';

/** Options of DeliveryWatchHub (`delivery.watch`). */
export interface DeliveryWatchHubOptions {
  /** Events buffered per watcher (`delivery.watch.buffer_size`). */
  bufferSize: number;
  /** Events read from the store per query (`delivery.watch.read_page_size`; never above bufferSize). */
  readPageSize: number;
  /** Open watches in this process (`delivery.watch.max_watchers`). */
  maxWatchers: number;
  /** Open watches of one caller in this process (`delivery.watch.max_watchers_per_caller`). */
  maxWatchersPerCaller: number;
  /** How long a watcher with events waiting may go without asking for one (`stall_seconds`). */
  stallMs: number;
  /** Safety sweep: sequence what no commit trigger did and re-read (`sweep_interval_seconds`). */
  sweepMs: number;
  logger?: Logger;
  /** PostgreSQL URL to LISTEN on, so other replicas' events arrive; omit for one process (PGlite). */
  listenUrl?: string;
  /** Interval of the LISTEN connection's ping (default 30 s). */
  listenPingMs?: number;
  /** Delay before retrying a failed store read (default 1000 ms). */
  retryDelayMs?: number;
  /** Milliseconds clock for the stall rule (tests inject one). */
  now?: () => number;
}

/** What a watch asks for. */
export interface DeliveryWatchOptions {
  /** Resume after this cursor (a previous frame's); absent or empty: start live. */
  after?: string;
  filter?: DeliveryEventFilter;
  /** Ends the watch (its iterator finishes). */
  signal?: AbortSignal;
}

/** One frame of a watch: a stored change, or `live` / `reset` (stream-only, no delivery fields). */
export type DeliveryWatchFrame =
  | { type: 'change'; cursor: string; event: DeliveryEvent }
  | { type: 'live' | 'reset'; cursor: string; occurredAt: Date };

const CURSOR = /^[0-9]{1,15}$/;

/** Parses a WatchDeliveries cursor; a malformed one is InvalidArgumentError naming `after_cursor`. */
export function parseDeliveryCursor(cursor: string): number {
  if (!CURSOR.test(cursor))
    throw new InvalidArgumentError('after_cursor is not a valid delivery watch cursor', 'after_cursor');
  return Number(cursor);
}

/** One open watch: the shared catch-up buffer (as the inbox hub's), its caller and filter. */
class Watcher extends CatchUpBuffer<DeliveryEvent> {
  constructor(
    readonly scope: string,
    readonly filter: DeliveryEventFilter | undefined,
    capacity: number,
    now: number,
  ) {
    super(capacity, now, 'delivery watcher stopped reading; resume from the last cursor');
  }
}

/** Fans delivery events out to the watching callers, across replicas on one PostgreSQL. */
export class DeliveryWatchHub {
  private readonly byScope = new Map<string, Set<Watcher>>();
  private readonly log: Logger;
  private readonly readPageSize: number;
  private readonly now: () => number;
  private total = 0;
  /** The last seq the hub read (valid once `ready` resolved after the first watcher joined). */
  private lastSeq = 0;
  private ready: Promise<void> | null = null;
  private dirty = false;
  private reading = false;
  private retry: NodeJS.Timeout | null = null;
  private sweep: NodeJS.Timeout | null = null;
  private listener: PgNotificationListener | null = null;
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly store: DeliveryStore,
    private readonly options: DeliveryWatchHubOptions,
  ) {
    this.log = (options.logger ?? silentLogger()).child({ component: 'delivery-watch-hub' });
    // Never read more than one buffer holds: a burst must not overflow a reader that keeps up.
    this.readPageSize = Math.max(1, Math.min(options.readPageSize, options.bufferSize));
    this.now = options.now ?? Date.now;
  }

  /** Subscribes to local sequencer passes, other replicas' NOTIFY, and starts the safety sweep. */
  async start(): Promise<void> {
    if (!this.unsubscribe) this.unsubscribe = this.store.onEventsSequenced((seq) => this.signal(seq));
    if (!this.sweep) {
      // A replica that died between its commit and its sequencer pass leaves events unnumbered, and a
      // lost NOTIFY leaves watchers waiting: the sweep numbers the first and re-reads for the second.
      this.sweep = setInterval(() => {
        this.store
          .sequenceEvents()
          .catch((err: unknown) => this.log.warn({ err }, 'delivery event sweep failed'))
          .finally(() => this.markDirty());
      }, this.options.sweepMs);
      this.sweep.unref();
    }
    if (this.options.listenUrl && !this.listener) {
      this.listener = new PgNotificationListener({
        url: this.options.listenUrl,
        channel: DELIVERY_EVENTS_CHANNEL,
        logger: this.log,
        applicationName: 'delivery-watch-hub',
        pingIntervalMs: this.options.listenPingMs,
        onNotification: (payload) => {
          const seq = Number(payload);
          if (Number.isSafeInteger(seq)) this.signal(seq);
          else this.log.warn('ignoring a malformed delivery event notification');
        },
        // Notifications sent while nobody listened are lost; the log is not: read it again.
        onConnect: () => this.markDirty(),
      });
      await this.listener.start();
    }
  }

  /** Ends every watch (their iterators finish), stops listening and the sweep. */
  async stop(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = null;
    if (this.sweep) clearInterval(this.sweep);
    this.sweep = null;
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    await this.listener?.stop();
    this.listener = null;
    for (const watchers of this.byScope.values()) for (const w of watchers) w.close();
    this.byScope.clear();
    this.total = 0;
  }

  /** Open watches in this process. */
  get watcherCount(): number {
    return this.total;
  }

  /** True while the cross-replica LISTEN connection is up (always false without a listen URL). */
  get listening(): boolean {
    return this.listener?.listening ?? false;
  }

  /**
   * One caller's delivery changes: those after `options.after` from the store, then live ones. The
   * cursor and the caps are checked now (InvalidArgumentError, ResourceExhaustedError), before
   * anything is read.
   */
  watch(scope: string, options: DeliveryWatchOptions = {}): AsyncIterable<DeliveryWatchFrame> {
    const after =
      options.after === undefined || options.after === '' ? null : parseDeliveryCursor(options.after);
    this.admit(scope);
    return this.iterate(scope, after, options.filter, options.signal);
  }

  private admit(scope: string): void {
    if (this.total >= this.options.maxWatchers) {
      throw new ResourceExhaustedError('too many open delivery watches on this server; retry later');
    }
    if ((this.byScope.get(scope)?.size ?? 0) >= this.options.maxWatchersPerCaller) {
      throw new ResourceExhaustedError('too many open delivery watches for this caller; close one first');
    }
  }

  private async *iterate(
    scope: string,
    after: number | null,
    filter: DeliveryEventFilter | undefined,
    signal?: AbortSignal,
  ): AsyncGenerator<DeliveryWatchFrame> {
    if (signal?.aborted) return;
    this.admit(scope);
    const watcher = new Watcher(scope, filter, this.options.bufferSize, this.now());
    this.join(watcher);
    const onAbort = () => watcher.close();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await this.ready;
      let last: number;
      if (after === null) {
        // Registered before `ready`: every event after the hub's position reaches this buffer.
        last = this.lastSeq;
        if (watcher.closed) return;
        yield { type: 'live', cursor: String(last), occurredAt: new Date() };
      } else {
        last = after;
        watcher.behind = true;
      }
      for (;;) {
        const next = await watcher.next(this.now);
        if (next === null) return;
        if (next === BEHIND) {
          watcher.behind = false;
          const page = await this.store.eventsAfter({
            scopes: [scope],
            after: last,
            limit: this.readPageSize,
            filter,
          });
          // Read after the page: a horizon past our cursor means events we never saw were purged.
          const horizon = await this.store.eventHorizon(scope);
          if (horizon > last) {
            const latest = await this.store.latestEventSeq();
            // Never below the horizon, or the next read would reset again.
            last = Math.max(latest, horizon, last);
            watcher.behind = true;
            if (watcher.closed) return;
            yield { type: 'reset', cursor: String(last), occurredAt: new Date() };
            continue;
          }
          for (const event of page) {
            if (watcher.closed) return;
            if (event.seq <= last) continue;
            last = event.seq;
            yield { type: 'change', cursor: String(event.seq), event };
          }
          if (page.length === this.readPageSize) watcher.behind = true;
          continue;
        }
        if (next.seq <= last) continue;
        last = next.seq;
        yield { type: 'change', cursor: String(next.seq), event: next };
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      watcher.close();
      this.leave(watcher);
    }
  }

  private join(watcher: Watcher): void {
    // The first watcher (again): the hub did not read while nobody watched, so it starts at the
    // log's current end instead of reading everything it skipped.
    if (this.total === 0 || !this.ready) {
      this.ready = this.store.latestEventSeq().then((seq) => {
        if (seq > this.lastSeq) this.lastSeq = seq;
        if (this.dirty) this.read();
      });
      this.ready.catch(() => {
        // The watchers waiting on it fail with the store's error; the next watch tries again.
        this.ready = null;
      });
    }
    let set = this.byScope.get(watcher.scope);
    if (!set) this.byScope.set(watcher.scope, (set = new Set()));
    set.add(watcher);
    this.total++;
  }

  private leave(watcher: Watcher): void {
    const set = this.byScope.get(watcher.scope);
    if (set?.delete(watcher)) this.total--;
    if (set && set.size === 0) this.byScope.delete(watcher.scope);
  }

  /** The log reaches `seq` (somewhere). */
  private signal(seq: number): void {
    if (this.total === 0 || seq <= this.lastSeq) return;
    this.markDirty();
  }

  private markDirty(): void {
    if (this.total === 0) return;
    this.dirty = true;
    void this.ready?.then(
      () => this.read(),
      () => undefined,
    );
  }

  /** What the emptiest buffer can take; when every reader is catching up, a full page. */
  private pageLimit(): number {
    let room = 0;
    for (const watchers of this.byScope.values()) for (const w of watchers) room = Math.max(room, w.room);
    return room === 0 ? this.readPageSize : Math.min(this.readPageSize, room);
  }

  /** Reads the watched callers' events after the last one read until nothing new is signalled. */
  private read(): void {
    if (this.reading || this.retry) return;
    this.reading = true;
    void (async () => {
      try {
        while (this.dirty && this.total > 0) {
          this.dirty = false;
          let page: DeliveryEvent[];
          let limit: number;
          do {
            limit = this.pageLimit();
            page = await this.store.eventsAfter({
              scopes: [...this.byScope.keys()],
              after: this.lastSeq,
              limit,
            });
            const now = this.now();
            for (const event of page) {
              if (event.seq <= this.lastSeq) continue;
              this.lastSeq = event.seq;
              for (const watcher of this.byScope.get(event.scope) ?? []) {
                if (!matchesEventFilter(event, watcher.filter)) continue;
                if (!watcher.push(event, now, this.options.stallMs)) this.leave(watcher);
              }
            }
          } while (page.length === limit && this.total > 0);
        }
      } catch (err) {
        this.log.error({ err }, 'reading delivery events failed; retrying');
        this.dirty = true;
        this.retry = setTimeout(() => {
          this.retry = null;
          this.read();
        }, this.options.retryDelayMs ?? 1000);
        this.retry.unref();
      } finally {
        this.reading = false;
      }
    })();
  }
}

/** The hub's options from `delivery.watch`, plus what the composition root knows (listen URL, logger). */
export function watchHubOptions(
  watch: DeliveryConfig['watch'],
  extra: Pick<DeliveryWatchHubOptions, 'logger' | 'listenUrl'> = {},
): DeliveryWatchHubOptions {
  return {
    bufferSize: watch.buffer_size,
    readPageSize: watch.read_page_size,
    maxWatchers: watch.max_watchers,
    maxWatchersPerCaller: watch.max_watchers_per_caller,
    stallMs: watch.stall_seconds * 1000,
    sweepMs: watch.sweep_interval_seconds * 1000,
    ...extra,
  };
}
