/**
 * BufferedMetricRecorder: buffers metric entries and hands them to a backend in batches, every
 * `flush_interval` seconds (5) or as soon as `max_buffer_size` (1000) entries wait. The entry name
 * is the backend operation that receives it, called as `backend[name](value, labels)`; only the
 * recording operations of {@link RECORDING_OPERATIONS} are accepted, so a name that reaches the
 * recorder from outside (`shutdown`, `constructor`, ...) can never call anything else.
 */
import { type Logger, silentLogger } from '../logging/logger';
import { type Clock, systemClock, type TimerHandle, type Timers, systemTimers } from '../runtime/clock';
import { InvalidMetricError } from './errors';
import type { Labels } from './types';
import { cutText } from '../text/cut';

/** Default seconds between background flushes. */
export const DEFAULT_FLUSH_INTERVAL = 5.0;
/** Default number of buffered entries that forces a flush. */
export const DEFAULT_MAX_BUFFER_SIZE = 1000;

/**
 * The operations a recorder may call, all of the form `(value, labels?)`: the instruments' `record`,
 * `increment`, `decrement`, `set` and `observe`, and `counter`, `gauge`, `histogram` of a backend
 * bound to one metric.
 */
export const RECORDING_OPERATIONS: ReadonlySet<string> = new Set([
  'record',
  'increment',
  'decrement',
  'set',
  'observe',
  'counter',
  'gauge',
  'histogram',
]);

/** One buffered measurement; `timestamp` is monotonic milliseconds taken at creation. */
export class MetricEntry {
  readonly timestamp: number;

  constructor(
    readonly name: string,
    readonly value: number,
    readonly labels?: Labels,
    clock: Clock = systemClock,
  ) {
    this.timestamp = clock.monotonic();
  }
}

/** Options of BufferedMetricRecorder. */
export interface BufferedMetricRecorderOptions {
  flush_interval?: number;
  max_buffer_size?: number;
  clock?: Clock;
  timers?: Timers;
  logger?: Logger;
}

type Operation = (value: number, labels?: Labels) => unknown;

/** Buffers metric entries for a backend. */
export class BufferedMetricRecorder<B extends object = object> {
  private buffer: MetricEntry[] = [];
  private handle: TimerHandle | undefined;
  private chain: Promise<unknown> = Promise.resolve();
  private readonly flushIntervalMs: number;
  private readonly maxBufferSize: number;
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly logger: Logger;

  constructor(
    private readonly backend: B,
    options: BufferedMetricRecorderOptions = {},
  ) {
    this.flushIntervalMs = (options.flush_interval ?? DEFAULT_FLUSH_INTERVAL) * 1000;
    this.maxBufferSize = Math.max(1, options.max_buffer_size ?? DEFAULT_MAX_BUFFER_SIZE);
    this.clock = options.clock ?? systemClock;
    this.timers = options.timers ?? systemTimers;
    this.logger = options.logger ?? silentLogger();
  }

  /** True between start() and stop(). */
  get running(): boolean {
    return this.handle !== undefined;
  }

  /** Entries waiting. */
  get size(): number {
    return this.buffer.length;
  }

  /**
   * Buffers one entry. `name` must be one of {@link RECORDING_OPERATIONS} and an operation of the
   * backend (InvalidMetricError otherwise). Reaching max_buffer_size starts a flush at once.
   */
  record(name: string, value: number, labels?: Labels): void {
    if (!RECORDING_OPERATIONS.has(name)) {
      throw new InvalidMetricError(
        `metric operation ${cutText(JSON.stringify(name), 80)} is not a recording operation`,
      );
    }
    if (typeof (this.backend as Record<string, unknown>)[name] !== 'function') {
      throw new InvalidMetricError(`metric operation ${name} is not an operation of the backend`);
    }
    this.buffer.push(new MetricEntry(name, value, labels, this.clock));
    if (this.buffer.length >= this.maxBufferSize) void this.flush();
  }

  /** Hands every buffered entry to the backend; resolves to how many were delivered. */
  flush(): Promise<number> {
    const entries = this.buffer;
    this.buffer = [];
    const run = this.chain.then(() => this.deliver(entries));
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Waits for flushes already started. */
  async idle(): Promise<void> {
    await this.chain;
  }

  /** Starts the periodic background flush; no-op when running. */
  start(): void {
    if (this.handle !== undefined) return;
    this.handle = this.timers.setInterval(() => void this.flush(), this.flushIntervalMs);
  }

  /** Stops the background flush and flushes what remains. */
  async stop(): Promise<number> {
    if (this.handle !== undefined) this.timers.clearInterval(this.handle);
    this.handle = undefined;
    const delivered = await this.flush();
    await this.idle();
    return delivered;
  }

  private async deliver(entries: MetricEntry[]): Promise<number> {
    let delivered = 0;
    const backend = this.backend as Record<string, Operation>;
    for (const entry of entries) {
      try {
        await backend[entry.name]!.call(this.backend, entry.value, entry.labels);
        delivered++;
      } catch (err) {
        this.logger.warn({ err, metric: entry.name }, 'buffered metric could not be recorded; dropped');
      }
    }
    return delivered;
  }
}
