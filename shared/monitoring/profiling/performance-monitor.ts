/**
 * Performance profiling: `PerformanceMonitor` samples CPU, memory, event-loop delay and the number
 * of active resources (the "task count": handles and requests keeping the loop busy) every
 * `sampling_interval` seconds while active, keeping at most `max_samples` samples (oldest dropped).
 * `profileFunction` / `profileAsyncFunction` time one call with its CPU and heap deltas, and
 * `monitorAsyncOperation` runs an operation under a fresh monitor. Time, timers and the resource
 * readings are injectable, so tests drive sampling by hand.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { type Clock, systemClock, type TimerHandle, type Timers, systemTimers } from '../../runtime/clock';
import { performanceMonitorConfigSchema, type PerformanceMonitorConfig } from '../config';
import { PerformanceMonitorError } from '../errors';

/** Where a monitor is in its life (spec: not active, active, stopped). */
export enum PerformanceMonitorState {
  IDLE = 'idle',
  ACTIVE = 'active',
  STOPPED = 'stopped',
}

/** One reading of the process. */
export interface PerformanceSample {
  /** Wall-clock epoch milliseconds. */
  timestamp: number;
  /** CPU time (user + system) over wall time since the previous sample, percent of one core. */
  cpu_percent: number;
  /** Resident set size, bytes. */
  rss_bytes: number;
  /** V8 heap in use, bytes. */
  heap_used_bytes: number;
  /** Mean event-loop delay since the previous sample, milliseconds. */
  event_loop_delay_ms: number;
  /** Largest event-loop delay since the previous sample, milliseconds. */
  event_loop_delay_max_ms: number;
  /** Active handles and requests (the spec's task count). */
  active_tasks: number;
}

/** Readings of the process, injectable for tests. */
export interface ResourceReader {
  cpuUsage(): NodeJS.CpuUsage;
  memoryUsage(): { rss: number; heapUsed: number };
  activeTasks(): number;
  /** An event-loop delay histogram; `enable()`d while monitoring. */
  eventLoopDelay(): Pick<IntervalHistogram, 'enable' | 'disable' | 'reset' | 'mean' | 'max' | 'count'>;
}

/** The real process readings. */
export const processResources: ResourceReader = {
  cpuUsage: () => process.cpuUsage(),
  memoryUsage: () => {
    const m = process.memoryUsage();
    return { rss: m.rss, heapUsed: m.heapUsed };
  },
  activeTasks: () => process.getActiveResourcesInfo().length,
  eventLoopDelay: () => monitorEventLoopDelay({ resolution: 10 }),
};

/** The samples of one monitoring run (`PerformanceMetrics`). */
export class PerformanceMetrics {
  /** Wall-clock epoch milliseconds of start, or null before start. */
  start_time: number | null = null;
  /** Wall-clock epoch milliseconds of stop, or null while running. */
  end_time: number | null = null;
  /** Samples kept (at most `max_samples`). */
  readonly samples: PerformanceSample[] = [];
  /** Samples dropped because the buffer was full. */
  dropped_samples = 0;
  /** Samples taken, kept or dropped. */
  total_samples = 0;

  /** Seconds between start and stop; null until stopped. */
  get duration(): number | null {
    if (this.start_time === null || this.end_time === null) return null;
    return (this.end_time - this.start_time) / 1000;
  }

  /** Samples taken per second of the finished run; 0 until stopped or for a zero-length run. */
  get samples_per_second(): number {
    const d = this.duration;
    return d && d > 0 ? this.total_samples / d : 0;
  }
}

/** Timing and memory data of one profiled call (`FunctionProfileResult`). */
export interface FunctionProfileResult {
  function_name: string;
  /** Wall seconds the call took (for an async function, until its promise settled). */
  execution_time: number;
  /** CPU seconds (user + system) of the whole process during the call. */
  cpu_time: number;
  memory_before: number;
  memory_after: number;
  /** Heap bytes gained (negative after a collection). */
  memory_delta: number;
  /** True when the call threw or rejected (the error is rethrown to the caller). */
  failed: boolean;
}

/** Options of PerformanceMonitor beyond its config. */
export interface PerformanceMonitorOptions {
  clock?: Clock;
  timers?: Timers;
  resources?: ResourceReader;
}

/** Samples the process while active. */
export class PerformanceMonitor {
  /** The validated settings. */
  readonly config: PerformanceMonitorConfig;
  private current = PerformanceMonitorState.IDLE;
  private run = new PerformanceMetrics();
  private handle: TimerHandle | undefined;
  private delay: ReturnType<ResourceReader['eventLoopDelay']> | undefined;
  private lastCpu: NodeJS.CpuUsage | undefined;
  private lastAt = 0;
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly resources: ResourceReader;

  constructor(config: Partial<PerformanceMonitorConfig> = {}, options: PerformanceMonitorOptions = {}) {
    this.config = performanceMonitorConfigSchema().parse(config);
    this.clock = options.clock ?? systemClock;
    this.timers = options.timers ?? systemTimers;
    this.resources = options.resources ?? processResources;
  }

  /** The monitor's state. */
  get state(): PerformanceMonitorState {
    return this.current;
  }

  /** The current (or last) run's metrics. */
  get metrics(): PerformanceMetrics {
    return this.run;
  }

  /**
   * Starts sampling every `sampling_interval`; a new run replaces a stopped one.
   * PerformanceMonitorError when already active.
   */
  startMonitoring(): void {
    if (this.current === PerformanceMonitorState.ACTIVE) {
      throw new PerformanceMonitorError('performance monitoring is already active');
    }
    this.run = new PerformanceMetrics();
    this.run.start_time = this.clock.now();
    this.lastCpu = this.resources.cpuUsage();
    this.lastAt = this.clock.monotonic();
    this.delay = this.resources.eventLoopDelay();
    this.delay.enable();
    this.current = PerformanceMonitorState.ACTIVE;
    this.handle = this.timers.setInterval(() => this.sample(), this.config.sampling_interval * 1000);
  }

  /** Stops sampling, takes a last sample and finalises the metrics. No-op unless active. */
  stopMonitoring(): PerformanceMetrics {
    if (this.current !== PerformanceMonitorState.ACTIVE) return this.run;
    if (this.handle !== undefined) this.timers.clearInterval(this.handle);
    this.handle = undefined;
    this.sample();
    this.delay?.disable();
    this.delay = undefined;
    this.run.end_time = this.clock.now();
    this.current = PerformanceMonitorState.STOPPED;
    return this.run;
  }

  /** Runs `fn` with monitoring on (`monitor_context`); stops even when `fn` throws. */
  async monitorContext<T>(fn: (monitor: this) => T | Promise<T>): Promise<T> {
    this.startMonitoring();
    try {
      return await fn(this);
    } finally {
      this.stopMonitoring();
    }
  }

  /** Calls `fn(...args)` once and returns its profile; a throw is rethrown after profiling. */
  profileFunction<A extends unknown[], R>(
    fn: (...args: A) => R,
    ...args: A
  ): FunctionProfileResult & { result: R } {
    const start = this.begin();
    try {
      const result = fn(...args);
      return { ...this.end(fn, start, false), result };
    } catch (err) {
      this.end(fn, start, true);
      throw err;
    }
  }

  /** Async counterpart of profileFunction: resolves to the result and the profile. */
  async profileAsyncFunction<A extends unknown[], R>(
    fn: (...args: A) => Promise<R> | R,
    ...args: A
  ): Promise<[R, FunctionProfileResult]> {
    const start = this.begin();
    try {
      const result = await fn(...args);
      return [result, this.end(fn, start, false)];
    } catch (err) {
      this.end(fn, start, true);
      throw err;
    }
  }

  /** Takes one sample now (the timer calls this; tests may too). Ignored unless active. */
  sample(): void {
    if (this.current !== PerformanceMonitorState.ACTIVE) return;
    const now = this.clock.monotonic();
    const cpu = this.resources.cpuUsage();
    const last = this.lastCpu ?? cpu;
    const cpuMs = (cpu.user - last.user + (cpu.system - last.system)) / 1000;
    const wallMs = now - this.lastAt;
    const memory = this.resources.memoryUsage();
    const delay = this.delay;
    // The histogram reports NaN mean / huge max before its first measurement.
    const measured = delay !== undefined && delay.count > 0;
    const sample: PerformanceSample = {
      timestamp: this.clock.now(),
      cpu_percent: wallMs > 0 ? Math.max(0, (cpuMs / wallMs) * 100) : 0,
      rss_bytes: memory.rss,
      heap_used_bytes: memory.heapUsed,
      event_loop_delay_ms: measured ? delay.mean / 1e6 : 0,
      event_loop_delay_max_ms: measured ? delay.max / 1e6 : 0,
      active_tasks: this.resources.activeTasks(),
    };
    delay?.reset();
    this.lastCpu = cpu;
    this.lastAt = now;
    const run = this.run;
    run.total_samples++;
    if (run.samples.length >= this.config.max_samples) {
      run.samples.shift();
      run.dropped_samples++;
    }
    run.samples.push(sample);
  }

  private begin(): { at: number; cpu: NodeJS.CpuUsage; heap: number } {
    return {
      heap: this.resources.memoryUsage().heapUsed,
      cpu: this.resources.cpuUsage(),
      at: this.clock.monotonic(),
    };
  }

  private end(
    fn: { name: string },
    start: { at: number; cpu: NodeJS.CpuUsage; heap: number },
    failed: boolean,
  ): FunctionProfileResult {
    const elapsed = this.clock.monotonic() - start.at;
    const now = this.resources.cpuUsage();
    const cpu = { user: now.user - start.cpu.user, system: now.system - start.cpu.system };
    const heap = this.resources.memoryUsage().heapUsed;
    return {
      function_name: fn.name || '<anonymous>',
      execution_time: elapsed / 1000,
      cpu_time: (cpu.user + cpu.system) / 1e6,
      memory_before: start.heap,
      memory_after: heap,
      memory_delta: heap - start.heap,
      failed,
    };
  }
}

/** `profile_async_function`: profiles one call of an async function with a throwaway monitor. */
export function profileAsyncFunction<A extends unknown[], R>(
  fn: (...args: A) => Promise<R> | R,
  ...args: A
): Promise<[R, FunctionProfileResult]> {
  return new PerformanceMonitor().profileAsyncFunction(fn, ...args);
}

/**
 * `monitor_async_operation`: runs `operation` with a new running monitor and stops it afterwards
 * (also on failure); the metrics stay on `monitor.metrics`.
 */
export function monitorAsyncOperation<T>(
  operation: (monitor: PerformanceMonitor) => Promise<T>,
  config: Partial<PerformanceMonitorConfig> = {},
  options: PerformanceMonitorOptions = {},
): Promise<T> {
  return new PerformanceMonitor(config, options).monitorContext(operation);
}

/** What getPerformanceSummary returns. */
export interface PerformanceSummary {
  /** Seconds, or null while the run has not stopped. */
  duration: number | null;
  sample_count: number;
  total_samples: number;
  dropped_samples: number;
  samples_per_second: number;
  cpu_avg_percent: number;
  cpu_max_percent: number;
  memory_avg_bytes: number;
  memory_max_bytes: number;
  heap_avg_bytes: number;
  event_loop_delay_avg_ms: number;
  event_loop_delay_max_ms: number;
  task_count_avg: number;
  task_count_max: number;
  /** True when at least one sample was taken. */
  has_profile_data: boolean;
}

/** `get_performance_summary`: averages and peaks of a run's kept samples (zeros when none). */
export function getPerformanceSummary(metrics: PerformanceMetrics): PerformanceSummary {
  const s = metrics.samples;
  const avg = (pick: (x: PerformanceSample) => number): number =>
    s.length === 0 ? 0 : s.reduce((sum, x) => sum + pick(x), 0) / s.length;
  const max = (pick: (x: PerformanceSample) => number): number => s.reduce((m, x) => Math.max(m, pick(x)), 0);
  return {
    duration: metrics.duration,
    sample_count: s.length,
    total_samples: metrics.total_samples,
    dropped_samples: metrics.dropped_samples,
    samples_per_second: metrics.samples_per_second,
    cpu_avg_percent: avg((x) => x.cpu_percent),
    cpu_max_percent: max((x) => x.cpu_percent),
    memory_avg_bytes: avg((x) => x.rss_bytes),
    memory_max_bytes: max((x) => x.rss_bytes),
    heap_avg_bytes: avg((x) => x.heap_used_bytes),
    event_loop_delay_avg_ms: avg((x) => x.event_loop_delay_ms),
    event_loop_delay_max_ms: max((x) => x.event_loop_delay_max_ms),
    task_count_avg: avg((x) => x.active_tasks),
    task_count_max: max((x) => x.active_tasks),
    has_profile_data: s.length > 0,
  };
}
