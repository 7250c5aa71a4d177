/** What the LiveHub tests share: one stream's numbers and words, and a frame reader. */
import type { LiveHubOptions } from '../../../shared/streams/live-hub';

/** A test stream's options (override per test). */
export const TEST_HUB_OPTIONS: LiveHubOptions = {
  bufferSize: 8,
  maxWatchers: 100,
  maxWatchersPerKey: 10,
  stallMs: 10_000,
  component: 'test-hub',
  cursor: { field: 'after_cursor', message: 'after_cursor is not a valid cursor' },
  messages: { tooManyWatches: 'too many watches', tooManyForKey: 'too many for you', stalled: 'stalled' },
};

/** Takes the next `n` frames; fails when the stream ends first. */
export async function take<F>(iterator: AsyncIterator<F>, n: number): Promise<F[]> {
  const out: F[] = [];
  while (out.length < n) {
    const next = await iterator.next();
    if (next.done) throw new Error(`stream ended after ${out.length} of ${n} frames`);
    out.push(next.value);
  }
  return out;
}
