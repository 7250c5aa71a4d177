/**
 * DeliveryWatchHub: live delivery status changes per caller, for WatchDeliveries. It is the one
 * live-stream hub (shared/streams/live-hub.ts) configured for the delivery event log (events.ts): the
 * whole log is one channel whose seqs are gap-free in commit order (the sequencer); each watch sees
 * its caller's scope, through its filter. A sequencer pass in this process (`store.onEventsSequenced`)
 * or on another replica (NOTIFY `delivery_events`, payload the latest seq, on the feed the composition
 * root hands in) says "the log reaches seq S". The rules (replay then live, bounded buffers, caught up
 * from the log, the stall rule, the `reset` past the caller's horizon) are the hub's.
 *
 * What deliveries add: a safety sweep that sequences what no commit trigger did and re-reads, frames
 * as WatchDeliveries sends them, and watches capped per caller and in total.
 */
import type { Clock } from '../../../shared/runtime/clock';
import { InvalidArgumentError } from '../../../shared/errors';
import type { Logger } from '../../../shared/logging/logger';
import { parseStreamCursor, type CursorField } from '../../../shared/streams/cursor';
import { LiveHub, type EventLog, type LiveFrame } from '../../../shared/streams/live-hub';
import type { NotifyFeed } from '../../../shared/streams/notify-feed';
import type { DeliveryConfig } from './config';
import { DELIVERY_EVENTS_CHANNEL } from './database-store';
import { matchesEventFilter, type DeliveryEvent, type DeliveryEventFilter } from './events';
import type { DeliveryStore } from './store';

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
  /** The service's LISTEN feed (opened by the composition root), so other replicas' events arrive; omit for one process. */
  notifications?: NotifyFeed;
  /** Delay before retrying a failed store read (default 1000 ms). */
  retryDelayMs?: number;
  /** The clock of the stall rule (tests inject one). */
  clock?: Clock;
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

const DELIVERY_CURSOR: CursorField = {
  field: 'after_cursor',
  message: 'after_cursor is not a valid delivery watch cursor',
};

/** The whole delivery log is one channel of the hub. */
const LOG = '';

/** Parses a WatchDeliveries cursor; a malformed one is InvalidArgumentError naming `after_cursor`. */
export function parseDeliveryCursor(cursor: string): number {
  const seq = parseStreamCursor(cursor, DELIVERY_CURSOR);
  if (seq === null) throw new InvalidArgumentError(DELIVERY_CURSOR.message, DELIVERY_CURSOR.field);
  return seq;
}

/** What one watcher wants: its caller's scope (null: every scope, an operator), through its filter. */
interface DeliveryWatch {
  scope: string | null;
  filter: DeliveryEventFilter | undefined;
}

/** The delivery store as the hub's event log. */
function deliveryEventLog(store: DeliveryStore): EventLog<DeliveryEvent, DeliveryWatch> {
  return {
    latestSeq: () => store.latestEventSeq(),
    // The hub's read: every watched scope, unfiltered (the hub routes by `matches`).
    readChannel: (_log, after, limit, watches) =>
      store.eventsAfter({
        scopes: watches.some((w) => w.scope === null)
          ? null
          : [...new Set(watches.map((w) => w.scope as string))],
        after,
        limit,
      }),
    readWatch: (_log, watch, after, limit) =>
      store.eventsAfter({
        scopes: watch.scope === null ? null : [watch.scope],
        after,
        limit,
        filter: watch.filter,
      }),
    // An operator's watch starts live (no cursor), so it never asks for a horizon.
    horizon: (_log, watch) => (watch.scope === null ? Promise.resolve(0) : store.eventHorizon(watch.scope)),
    matches: (watch, event) =>
      (watch.scope === null || event.scope === watch.scope) && matchesEventFilter(event, watch.filter),
    onAppended: (listener) => store.onEventsSequenced((seq) => listener(LOG, seq)),
  };
}

/** Fans delivery events out to the watching callers, across replicas on one PostgreSQL. */
export class DeliveryWatchHub {
  private readonly hub: LiveHub<DeliveryEvent, DeliveryWatch>;
  private readonly log: Logger | undefined;
  private sweep: NodeJS.Timeout | null = null;

  constructor(
    private readonly store: DeliveryStore,
    private readonly options: DeliveryWatchHubOptions,
  ) {
    this.log = options.logger?.child({ component: 'delivery-watch-hub' });
    this.hub = new LiveHub(deliveryEventLog(store), {
      bufferSize: options.bufferSize,
      readPageSize: options.readPageSize,
      maxWatchers: options.maxWatchers,
      maxWatchersPerKey: options.maxWatchersPerCaller,
      stallMs: options.stallMs,
      retryDelayMs: options.retryDelayMs,
      clock: options.clock,
      logger: options.logger,
      component: 'delivery-watch-hub',
      cursor: DELIVERY_CURSOR,
      messages: {
        tooManyWatches: 'too many open delivery watches on this server; retry later',
        tooManyForKey: 'too many open delivery watches for this caller; close one first',
        stalled: 'delivery watcher stopped reading; resume from the last cursor',
      },
      notifications: options.notifications && {
        feed: options.notifications,
        channel: DELIVERY_EVENTS_CHANNEL,
        parse: (payload) => {
          const seq = Number(payload);
          return Number.isSafeInteger(seq) ? { channel: LOG, seq } : null;
        },
      },
    });
  }

  /** Subscribes to local sequencer passes, other replicas' NOTIFY, and starts the safety sweep. */
  async start(): Promise<void> {
    this.hub.start();
    if (!this.sweep) {
      // A replica that died between its commit and its sequencer pass leaves events unnumbered, and a
      // lost NOTIFY leaves watchers waiting: the sweep numbers the first and re-reads for the second.
      this.sweep = setInterval(() => {
        this.store
          .sequenceEvents()
          .catch((err: unknown) => this.log?.warn({ err }, 'delivery event sweep failed'))
          .finally(() => this.hub.markAllDirty());
      }, this.options.sweepMs);
      this.sweep.unref();
    }
  }

  /** Ends every watch (their iterators finish), stops listening and the sweep. */
  async stop(): Promise<void> {
    if (this.sweep) clearInterval(this.sweep);
    this.sweep = null;
    this.hub.stop();
  }

  /** Open watches in this process. */
  get watcherCount(): number {
    return this.hub.watcherCount;
  }

  /** True while the cross-replica LISTEN connection is up (always false without a feed). */
  get listening(): boolean {
    return this.hub.listening;
  }

  /**
   * One caller's delivery changes: those after `options.after` from the store, then live ones. The
   * cursor and the caps are checked now (InvalidArgumentError, ResourceExhaustedError), before
   * anything is read.
   */
  watch(scope: string, options: DeliveryWatchOptions = {}): AsyncIterable<DeliveryWatchFrame> {
    const frames = this.hub.watch({
      channel: LOG,
      watch: { scope, filter: options.filter },
      capKey: scope,
      after: options.after,
      signal: options.signal,
    });
    return toDeliveryFrames(frames);
  }

  /**
   * Every caller's delivery changes from now on (an operator's watch: the console); the per-caller
   * cap counts `operator`'s watches, under a key no RPC caller's scope can take.
   */
  watchEveryScope(operator: string, options: OperatorWatchOptions = {}): AsyncIterable<DeliveryWatchFrame> {
    const frames = this.hub.watch({
      channel: LOG,
      watch: { scope: null, filter: options.filter },
      capKey: `\u0000operator:${operator}`,
      signal: options.signal,
    });
    return toDeliveryFrames(frames);
  }
}

/** What an operator's watch asks for: live only (no cursor), every caller's deliveries. */
export interface OperatorWatchOptions {
  filter?: DeliveryEventFilter;
  signal?: AbortSignal;
}

async function* toDeliveryFrames(
  frames: AsyncIterable<LiveFrame<DeliveryEvent>>,
): AsyncGenerator<DeliveryWatchFrame> {
  for await (const frame of frames) {
    if (frame.type === 'event') yield { type: 'change', cursor: String(frame.seq), event: frame.event };
    else yield { type: frame.type, cursor: String(frame.seq), occurredAt: new Date() };
  }
}

/** The hub's options from `delivery.watch`, plus what the composition root knows (LISTEN feed, logger). */
export function watchHubOptions(
  watch: DeliveryConfig['watch'],
  extra: Pick<DeliveryWatchHubOptions, 'logger' | 'notifications'> = {},
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
