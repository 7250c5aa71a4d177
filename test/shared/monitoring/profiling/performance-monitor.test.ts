import { PerformanceMonitorError } from '../../../../shared/monitoring/errors';
import {
  getPerformanceSummary,
  monitorAsyncOperation,
  PerformanceMetrics,
  PerformanceMonitor,
  PerformanceMonitorState,
  profileAsyncFunction,
  type ResourceReader,
} from '../../../../shared/monitoring/profiling/performance-monitor';
import { FakeClock, FakeTimers } from '../helpers';

/** Process readings driven by the test; CPU time advances with `burn`. */
class FakeResources implements ResourceReader {
  cpu = { user: 0, system: 0 };
  rss = 100_000_000;
  heap = 10_000_000;
  tasks = 3;
  delayEnabled = false;
  delay = {
    mean: 2e6,
    max: 8e6,
    count: 5,
    enable: () => ((this.delayEnabled = true), true),
    disable: () => ((this.delayEnabled = false), true),
    reset: () => undefined,
  };
  burn(userMicros: number, systemMicros = 0): void {
    this.cpu = { user: this.cpu.user + userMicros, system: this.cpu.system + systemMicros };
  }
  cpuUsage(): NodeJS.CpuUsage {
    return { ...this.cpu };
  }
  memoryUsage(): { rss: number; heapUsed: number } {
    return { rss: this.rss, heapUsed: this.heap };
  }
  activeTasks(): number {
    return this.tasks;
  }
  eventLoopDelay(): FakeResources['delay'] {
    return this.delay;
  }
}

function setup(config: { sampling_interval?: number; max_samples?: number } = {}) {
  const clock = new FakeClock();
  const timers = new FakeTimers(clock);
  const resources = new FakeResources();
  const monitor = new PerformanceMonitor(config, { clock, timers, resources });
  return { clock, timers, resources, monitor };
}

describe('PerformanceMonitor', () => {
  it('moves idle -> active -> stopped; a second start while active is a PerformanceMonitorError', () => {
    const { monitor } = setup();
    expect(monitor.state).toBe(PerformanceMonitorState.IDLE);
    monitor.startMonitoring();
    expect(monitor.state).toBe(PerformanceMonitorState.ACTIVE);
    expect(() => monitor.startMonitoring()).toThrow(PerformanceMonitorError);
    monitor.stopMonitoring();
    expect(monitor.state).toBe(PerformanceMonitorState.STOPPED);
  });

  it('samples CPU, memory, event-loop delay and tasks every sampling_interval while active', () => {
    const { monitor, timers, resources } = setup({ sampling_interval: 0.5 });
    monitor.startMonitoring();
    expect(resources.delayEnabled).toBe(true);
    resources.burn(250_000); // 250 ms CPU over the next 500 ms of wall time
    timers.advance(500);
    resources.rss = 120_000_000;
    timers.advance(500);
    const samples = monitor.metrics.samples;
    expect(samples).toHaveLength(2);
    expect(samples[0]).toMatchObject({
      cpu_percent: 50,
      rss_bytes: 100_000_000,
      heap_used_bytes: 10_000_000,
      event_loop_delay_ms: 2,
      event_loop_delay_max_ms: 8,
      active_tasks: 3,
    });
    expect(samples[1]).toMatchObject({ cpu_percent: 0, rss_bytes: 120_000_000 });
    monitor.stopMonitoring();
    expect(resources.delayEnabled).toBe(false);
    expect(timers.pending).toBe(0);
    // stop takes a last sample; nothing is sampled after it.
    timers.advance(5000);
    expect(monitor.metrics.samples).toHaveLength(3);
  });

  it('keeps at most max_samples samples, dropping the oldest and counting them', () => {
    const { monitor, timers, clock } = setup({ sampling_interval: 1, max_samples: 3 });
    monitor.startMonitoring();
    for (let i = 0; i < 5; i++) timers.advance(1000);
    const stamps = monitor.metrics.samples.map((s) => s.timestamp);
    expect(stamps).toEqual([clock.wall - 2000, clock.wall - 1000, clock.wall]);
    expect(monitor.metrics.dropped_samples).toBe(2);
    expect(monitor.metrics.total_samples).toBe(5);
  });

  it('finalises duration and samples per second at stop', () => {
    const { monitor, timers } = setup({ sampling_interval: 1 });
    monitor.startMonitoring();
    expect(monitor.metrics.duration).toBeNull();
    for (let i = 0; i < 3; i++) timers.advance(1000);
    timers.advance(1000);
    const metrics = monitor.stopMonitoring();
    expect(metrics.duration).toBe(4);
    // 4 timer samples + the final one over 4 seconds.
    expect(metrics.samples_per_second).toBe(5 / 4);
  });

  it('monitorContext stops the monitor even when the body throws', async () => {
    const { monitor } = setup();
    await expect(
      monitor.monitorContext(() => {
        expect(monitor.state).toBe(PerformanceMonitorState.ACTIVE);
        throw new Error('body failed');
      }),
    ).rejects.toThrow('body failed');
    expect(monitor.state).toBe(PerformanceMonitorState.STOPPED);
    expect(monitor.metrics.samples).toHaveLength(1);
  });

  it('can be started again after stop, with fresh metrics', () => {
    const { monitor, timers } = setup({ sampling_interval: 1 });
    monitor.startMonitoring();
    timers.advance(3000);
    monitor.stopMonitoring();
    monitor.startMonitoring();
    expect(monitor.metrics.samples).toHaveLength(0);
    monitor.stopMonitoring();
  });

  it('profileFunction reports wall time, CPU time and heap delta and returns the result', () => {
    const { monitor, clock, resources } = setup();
    const profile = monitor.profileFunction(function work(n: number) {
      clock.advance(1500);
      resources.burn(700_000, 100_000);
      resources.heap += 2048;
      return n * 2;
    }, 21);
    expect(profile).toMatchObject({
      function_name: 'work',
      result: 42,
      execution_time: 1.5,
      cpu_time: 0.8,
      memory_delta: 2048,
      failed: false,
    });
  });

  it('profileFunction rethrows what the function throws', () => {
    const { monitor } = setup();
    expect(() =>
      monitor.profileFunction(() => {
        throw new RangeError('bad');
      }),
    ).toThrow(RangeError);
  });

  it('profileAsyncFunction measures until the promise settles', async () => {
    const { monitor, clock } = setup();
    const [result, profile] = await monitor.profileAsyncFunction(async (a: string) => {
      await Promise.resolve();
      clock.advance(250);
      return a.toUpperCase();
    }, 'ok');
    expect(result).toBe('OK');
    expect(profile.execution_time).toBe(0.25);
  });

  it('rejects a sampling_interval that is not positive', () => {
    expect(() => new PerformanceMonitor({ sampling_interval: 0 })).toThrow();
  });
});

describe('module functions', () => {
  it('profileAsyncFunction (module) returns the result and a profile with real readings', async () => {
    const [result, profile] = await profileAsyncFunction(async (x: number) => x + 1, 1);
    expect(result).toBe(2);
    expect(profile.execution_time).toBeGreaterThanOrEqual(0);
    expect(profile.memory_before).toBeGreaterThan(0);
  });

  it('monitorAsyncOperation gives the operation a running monitor and stops it after', async () => {
    let seen: PerformanceMonitor | undefined;
    const out = await monitorAsyncOperation(async (monitor) => {
      seen = monitor;
      expect(monitor.state).toBe(PerformanceMonitorState.ACTIVE);
      return 'done';
    });
    expect(out).toBe('done');
    expect(seen!.state).toBe(PerformanceMonitorState.STOPPED);
    const summary = getPerformanceSummary(seen!.metrics);
    expect(summary.has_profile_data).toBe(true);
    expect(summary.memory_max_bytes).toBeGreaterThan(0);
  });

  it('getPerformanceSummary averages and peaks the samples; without samples has_profile_data is false', () => {
    const { monitor, timers, resources } = setup({ sampling_interval: 1 });
    monitor.startMonitoring();
    resources.burn(1_000_000);
    timers.advance(1000);
    resources.tasks = 7;
    resources.rss = 300_000_000;
    timers.advance(1000);
    const summary = getPerformanceSummary(monitor.stopMonitoring());
    expect(summary).toMatchObject({
      duration: 2,
      sample_count: 3,
      cpu_max_percent: 100,
      memory_max_bytes: 300_000_000,
      task_count_max: 7,
      event_loop_delay_max_ms: 8,
      has_profile_data: true,
    });
    expect(summary.cpu_avg_percent).toBeCloseTo(100 / 3);
    expect(getPerformanceSummary(new PerformanceMetrics())).toMatchObject({
      duration: null,
      sample_count: 0,
      cpu_avg_percent: 0,
      has_profile_data: false,
    });
  });
});
