import { NoopMetricsBackend } from '../../../shared/monitoring/backends/backend';
import {
  BufferedMetricRecorder,
  MetricEntry,
  RECORDING_OPERATIONS,
} from '../../../shared/monitoring/buffered-recorder';
import { InvalidMetricError } from '../../../shared/monitoring/errors';
import type { Labels } from '../../../shared/monitoring/types';
import { captureLogger, FakeClock, FakeTimers } from './helpers';

class RecordingBackend {
  calls: Array<[string, number, Labels | undefined]> = [];
  async counter(value: number, labels?: Labels): Promise<void> {
    this.calls.push(['counter', value, labels]);
  }
  gauge(value: number, labels?: Labels): void {
    this.calls.push(['gauge', value, labels]);
  }
}

describe('BufferedMetricRecorder', () => {
  it('buffers entries until flush, which hands them to the named backend operation', async () => {
    const backend = new RecordingBackend();
    const recorder = new BufferedMetricRecorder(backend, { timers: new FakeTimers() });
    recorder.record('counter', 2, { queue: 'mail' });
    recorder.record('gauge', 7);
    expect(backend.calls).toHaveLength(0);
    expect(await recorder.flush()).toBe(2);
    expect(backend.calls).toEqual([
      ['counter', 2, { queue: 'mail' }],
      ['gauge', 7, undefined],
    ]);
  });

  it('a name that matches no backend operation is an InvalidMetricError', () => {
    const recorder = new BufferedMetricRecorder(new RecordingBackend(), { timers: new FakeTimers() });
    expect(() => recorder.record('histogram', 1)).toThrow(InvalidMetricError);
    expect(recorder.size).toBe(0);
  });

  it('a backend method that is not a recording operation (shutdown, constructor) is refused and never called', async () => {
    let shutdowns = 0;
    const backend = {
      counter: () => undefined,
      shutdown: () => {
        shutdowns++;
      },
    };
    const recorder = new BufferedMetricRecorder(backend, { timers: new FakeTimers() });
    for (const name of ['shutdown', 'constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      expect(() => recorder.record(name, 1)).toThrow(InvalidMetricError);
    }
    expect(recorder.size).toBe(0);
    expect(await recorder.flush()).toBe(0);
    expect(shutdowns).toBe(0);
    expect(RECORDING_OPERATIONS.has('shutdown')).toBe(false);
  });

  it('once started, flushes every flush_interval (5 s by default)', async () => {
    const timers = new FakeTimers();
    const backend = new RecordingBackend();
    const recorder = new BufferedMetricRecorder(backend, { timers });
    recorder.start();
    recorder.record('gauge', 1);
    timers.advance(4999);
    await recorder.idle();
    expect(backend.calls).toHaveLength(0);
    timers.advance(1);
    await recorder.idle();
    expect(backend.calls).toHaveLength(1);
    await recorder.stop();
  });

  it('reaching max_buffer_size (1000 by default) flushes at once', async () => {
    const backend = new RecordingBackend();
    const recorder = new BufferedMetricRecorder(backend, { timers: new FakeTimers() });
    for (let i = 0; i < 999; i++) recorder.record('gauge', i);
    await recorder.idle();
    expect(backend.calls).toHaveLength(0);
    recorder.record('gauge', 999);
    await recorder.idle();
    expect(backend.calls).toHaveLength(1000);
    expect(recorder.size).toBe(0);
  });

  it('stop ends the background flush and flushes what remains', async () => {
    const timers = new FakeTimers();
    const backend = new RecordingBackend();
    const recorder = new BufferedMetricRecorder(backend, { timers, flush_interval: 1 });
    recorder.start();
    recorder.record('counter', 1);
    expect(await recorder.stop()).toBe(1);
    expect(recorder.running).toBe(false);
    expect(timers.pending).toBe(0);
    expect(backend.calls).toHaveLength(1);
  });

  it('an entry the backend rejects is logged and not counted; the rest are delivered', async () => {
    const { logger, lines } = captureLogger();
    const backend = {
      counter: () => {
        throw new Error('backend down');
      },
      gauge: () => undefined,
    };
    const recorder = new BufferedMetricRecorder(backend, { timers: new FakeTimers(), logger });
    recorder.record('counter', 1);
    recorder.record('gauge', 1);
    expect(await recorder.flush()).toBe(1);
    expect(lines.some((l) => l.msg === 'buffered metric could not be recorded; dropped')).toBe(true);
  });
});

describe('MetricEntry', () => {
  it('takes its timestamp from the monotonic clock at creation', () => {
    const clock = new FakeClock(1234);
    const entry = new MetricEntry('counter', 1, { a: 'b' }, clock);
    clock.advance(10);
    expect(entry.timestamp).toBe(1234);
  });
});

describe('NoopMetricsBackend', () => {
  it('accepts records and spans and keeps nothing', async () => {
    const backend = new NoopMetricsBackend();
    await backend.initialize();
    expect(backend.recordMetric('jobs', 1, 'counter')).toBeUndefined();
    expect(backend.createSpan('op').name).toBe('op');
    await backend.shutdown();
  });
});
