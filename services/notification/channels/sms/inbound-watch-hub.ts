/**
 * InboundSmsWatchHub: WatchInboundSms's live stream. It is the one live-stream hub
 * (shared/streams/live-hub.ts) configured for the inbound SMS log (inbound-log.ts): the whole log is
 * one channel, a message's id is its seq, and every watcher wants every message (the `sms:inbound`
 * scope is the whole authorisation: there is no per-caller share of the log). An append in this
 * process (`log.onAppended`) or on another replica (NOTIFY `inbound_sms`, payload the id, on the feed
 * the composition root hands in) says "the log reaches id N". The rules (replay after a cursor then
 * live, bounded buffers, caught up from the log, the stall rule, the `reset` past the horizon, caps
 * in total and per caller) are the hub's.
 */
import type { Clock } from '../../../../shared/runtime/clock';
import type { Logger } from '../../../../shared/logging/logger';
import type { CursorField } from '../../../../shared/streams/cursor';
import {
  LiveHub,
  type EventLog,
  type LiveFrame,
  type LoggedEvent,
} from '../../../../shared/streams/live-hub';
import type { NotifyFeed } from '../../../../shared/streams/notify-feed';
import { INBOUND_SMS_CHANNEL, type InboundSms, type InboundSmsLog } from './inbound-log';

/** Options of InboundSmsWatchHub (`notification.webhooks.inbound_sms_watch`). */
export interface InboundSmsWatchHubOptions {
  /** Messages buffered per watcher; a reader further behind catches up from the log. */
  bufferSize: number;
  /** Open watches in this process. */
  maxWatchers: number;
  /** Open watches of one caller in this process. */
  maxWatchersPerCaller: number;
  /** How long a watcher with messages waiting may go without asking for one. */
  stallMs: number;
  logger?: Logger;
  /** The service's LISTEN feed (opened by the composition root); omit for one process. */
  notifications?: NotifyFeed;
  retryDelayMs?: number;
  /** The clock of the stall rule (tests inject one). */
  clock?: Clock;
}

/** What a watch asks for. */
export interface InboundSmsWatchOptions {
  /** Resume after this id; absent or empty: start live. */
  afterId?: string;
  signal?: AbortSignal;
}

/** One frame: a logged message, or `live` / `reset` (stream-only) with the id where the stream stands. */
export type InboundSmsFrame =
  { type: 'message'; id: number; message: InboundSms } | { type: 'live' | 'reset'; id: number };

interface InboundSmsEvent extends LoggedEvent {
  readonly message: InboundSms;
}

const INBOUND_CURSOR: CursorField = {
  field: 'after_id',
  message: 'after_id is not a valid inbound SMS id (a decimal number, at most 15 digits)',
};

/** The whole log is one channel of the hub. */
const LOG = '';

function inboundEventLog(log: InboundSmsLog): EventLog<InboundSmsEvent, null> {
  const read = async (after: number, limit: number) =>
    (await log.after(after, limit)).map((message) => ({ seq: message.id, message }));
  return {
    latestSeq: () => log.latestId(),
    readChannel: (_channel, after, limit) => read(after, limit),
    readWatch: (_channel, _watch, after, limit) => read(after, limit),
    horizon: () => log.horizon(),
    onAppended: (listener) => log.onAppended((id) => listener(LOG, id)),
  };
}

/** Fans the inbound SMS log out to its watchers, across replicas on one PostgreSQL. */
export class InboundSmsWatchHub {
  private readonly hub: LiveHub<InboundSmsEvent, null>;

  constructor(log: InboundSmsLog, options: InboundSmsWatchHubOptions) {
    this.hub = new LiveHub(inboundEventLog(log), {
      bufferSize: options.bufferSize,
      maxWatchers: options.maxWatchers,
      maxWatchersPerKey: options.maxWatchersPerCaller,
      stallMs: options.stallMs,
      retryDelayMs: options.retryDelayMs,
      clock: options.clock,
      logger: options.logger,
      component: 'inbound-sms-watch-hub',
      cursor: INBOUND_CURSOR,
      messages: {
        tooManyWatches: 'too many open inbound SMS watches on this server; retry later',
        tooManyForKey: 'too many open inbound SMS watches for this caller; close one first',
        stalled: 'inbound SMS watcher stopped reading; resume after the last id',
      },
      notifications: options.notifications && {
        feed: options.notifications,
        channel: INBOUND_SMS_CHANNEL,
        parse: (payload) => {
          const id = Number(payload);
          return Number.isSafeInteger(id) && id > 0 ? { channel: LOG, seq: id } : null;
        },
      },
    });
  }

  /** Subscribes to local appends and other replicas' NOTIFY. */
  start(): void {
    this.hub.start();
  }

  /** Ends every watch (their iterators finish) and stops listening. */
  stop(): void {
    this.hub.stop();
  }

  /** Open watches in this process. */
  get watcherCount(): number {
    return this.hub.watcherCount;
  }

  /**
   * The messages after `afterId` from the log, then live ones, for `caller` (its cap key). The id and
   * the caps are checked now (InvalidArgumentError, ResourceExhaustedError), before anything is read.
   */
  watch(caller: string, options: InboundSmsWatchOptions = {}): AsyncIterable<InboundSmsFrame> {
    return toFrames(
      this.hub.watch({
        channel: LOG,
        watch: null,
        capKey: caller,
        after: options.afterId,
        signal: options.signal,
      }),
    );
  }
}

async function* toFrames(frames: AsyncIterable<LiveFrame<InboundSmsEvent>>): AsyncGenerator<InboundSmsFrame> {
  for await (const frame of frames) {
    if (frame.type === 'event') yield { type: 'message', id: frame.seq, message: frame.event.message };
    else yield { type: frame.type, id: frame.seq };
  }
}
