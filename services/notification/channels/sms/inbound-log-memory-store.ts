/**
 * InMemoryInboundSmsLog: the `memory` store of the inbound SMS log (inbound-log.ts), for tests and
 * throwaway runs. Messages in id order; at most `maxMessages` (the oldest go as a new one arrives);
 * the retention is measured on the injected clock. One process: appends are numbered at once and
 * announced to the local listeners. Numbers start past every id an earlier process handed out
 * (`epochFirstSeq` of the clock): a reader's cursor kept across a restart is below the horizon and
 * gets a reset, never the new messages under its numbers.
 */
import { type Clock, dateReader, systemClock } from '../../../../shared/runtime/clock';
import { epochFirstSeq } from '../../../../shared/streams/memory-event-log';
import {
  DEFAULT_INBOUND_SMS_MAX_MESSAGES,
  type InboundSms,
  type InboundSmsLog,
  type NewInboundSms,
  inboundSmsBody,
  inboundSmsTo,
} from './inbound-log';

/** What the memory store is built from. */
export interface InMemoryInboundSmsLogOptions {
  maxMessages?: number;
  clock?: Clock;
}

const HOUR_MS = 3_600_000;

/** The in-memory InboundSmsLog. */
export class InMemoryInboundSmsLog implements InboundSmsLog {
  readonly backend = 'memory' as const;
  /** Oldest first. */
  private messages: (InboundSms & { key: string })[] = [];
  /** `${backend}\n${providerId}` of the kept messages. */
  private readonly keys = new Set<string>();
  private lastId: number;
  /** Starts below the first id: every id up to it belongs to an earlier log. */
  private purgedThrough: number;
  private readonly maxMessages: number;
  private readonly now: () => Date;
  private readonly listeners = new Set<(id: number) => void>();

  constructor(options: InMemoryInboundSmsLogOptions = {}) {
    this.maxMessages = options.maxMessages ?? DEFAULT_INBOUND_SMS_MAX_MESSAGES;
    if (!(this.maxMessages >= 1)) throw new RangeError('maxMessages must be at least 1');
    this.now = dateReader(options.clock);
    this.lastId = this.purgedThrough = epochFirstSeq((options.clock ?? systemClock).now()) - 1;
  }

  /** Messages held now. */
  get size(): number {
    return this.messages.length;
  }

  async append(message: NewInboundSms): Promise<InboundSms | null> {
    const key = `${message.backend}\n${message.providerId}`;
    if (this.keys.has(key)) return null;
    const logged = {
      id: ++this.lastId,
      backend: message.backend,
      from: message.from,
      to: inboundSmsTo(message.to),
      body: inboundSmsBody(message.body),
      receivedAt: this.now(),
      key,
    };
    this.messages.push(logged);
    this.keys.add(key);
    if (this.messages.length > this.maxMessages) this.drop(this.messages.length - this.maxMessages);
    for (const listener of this.listeners) listener(logged.id);
    return strip(logged);
  }

  async after(afterId: number, limit: number): Promise<InboundSms[]> {
    let lo = 0;
    let hi = this.messages.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.messages[mid]!.id <= afterId) lo = mid + 1;
      else hi = mid;
    }
    return this.messages.slice(lo, lo + Math.max(0, limit)).map(strip);
  }

  async latestId(): Promise<number> {
    return this.lastId;
  }

  async horizon(): Promise<number> {
    return this.purgedThrough;
  }

  async purgeExpired(retentionHours: number, batch: number, signal?: AbortSignal): Promise<number> {
    const cutoff = this.now().getTime() - retentionHours * HOUR_MS;
    let total = 0;
    for (;;) {
      let n = 0;
      while (n < batch && n < this.messages.length && this.messages[n]!.receivedAt.getTime() < cutoff) n++;
      if (n > 0) this.drop(n);
      total += n;
      if (n < batch || signal?.aborted) return total;
    }
  }

  async eraseSenders(numbers: readonly string[]): Promise<number> {
    if (numbers.length === 0) return 0;
    const gone = new Set(numbers);
    const before = this.messages.length;
    this.messages = this.messages.filter((m) => {
      if (!gone.has(m.from)) return true;
      this.keys.delete(m.key);
      return false;
    });
    return before - this.messages.length;
  }

  onAppended(listener: (id: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Drops the `n` oldest messages; the horizon moves past them. */
  private drop(n: number): void {
    const dropped = this.messages.splice(0, n);
    for (const m of dropped) this.keys.delete(m.key);
    if (dropped.length > 0) this.purgedThrough = Math.max(this.purgedThrough, dropped.at(-1)!.id);
  }
}

function strip(m: InboundSms & { key?: string }): InboundSms {
  return {
    id: m.id,
    backend: m.backend,
    from: m.from,
    to: m.to,
    body: m.body,
    receivedAt: new Date(m.receivedAt),
  };
}
