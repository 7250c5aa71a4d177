/**
 * The load suites' call statistics keep a bounded sample whatever the run's length, and read
 * quantiles and error counts from it correctly.
 */
import { CallStats, LATENCY_SAMPLE_SIZE, loop } from './call-stats';

test('latencies are kept up to the sample size and no further, and quantiles come from them', () => {
  const stats = new CallStats();
  for (let i = 1; i <= 100; i++) stats.ok('Send', i);
  expect(stats.quantile('Send', 0.5)).toBe(50);
  expect(stats.quantile('Send', 0.99)).toBe(99);
  expect(stats.quantile('Send', 1)).toBe(100);

  for (let i = 0; i < 3 * LATENCY_SAMPLE_SIZE; i++) stats.ok('Send', 7);
  const kind = stats.kinds.get('Send')!;
  expect(kind.calls).toBe(100 + 3 * LATENCY_SAMPLE_SIZE);
  expect(kind.latencies).toHaveLength(LATENCY_SAMPLE_SIZE);
  // A uniform sample of mostly 7s: the median is 7.
  expect(stats.quantile('Send', 0.5)).toBe(7);
  expect(stats.quantile('Other', 0.5)).toBeNaN();
});

test('errors are counted per kind with their first texts, at most five', async () => {
  const stats = new CallStats();
  let calls = 0;
  await loop(
    stats,
    'GetInbox',
    () => calls >= 12,
    async (i) => {
      calls++;
      if (i % 2 === 1) throw new Error(`failure ${i}`);
    },
  );
  const kind = stats.kinds.get('GetInbox')!;
  expect([kind.calls, kind.errors]).toEqual([12, 6]);
  expect(kind.errorSamples).toEqual([
    'Error: failure 1',
    'Error: failure 3',
    'Error: failure 5',
    'Error: failure 7',
    'Error: failure 9',
  ]);
  expect([stats.totalCalls, stats.totalErrors]).toEqual([12, 6]);
  expect(kind.latencies).toHaveLength(6);
});
