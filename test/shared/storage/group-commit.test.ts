/**
 * GroupCommit, the one group-commit batcher of the stores: items of one event-loop turn share a
 * flush, flushes run one at a time (or up to the configured number), the pending bound answers at
 * once, and a flush's error reaches every caller of its batch.
 */
import { GroupCommit, type GroupCommitOptions } from '../../../shared/storage/group-commit';

/** A flush the test finishes by hand: each call is recorded with its batch and its answer. */
function manualFlush<T>() {
  const calls: {
    batch: T[];
    finish(results: PromiseSettledResult<string>[]): void;
    fail(err: unknown): void;
  }[] = [];
  let running = 0;
  let mostRunning = 0;
  const flush: GroupCommitOptions<T, string>['flush'] = (batch) =>
    new Promise((resolve, reject) => {
      running++;
      mostRunning = Math.max(mostRunning, running);
      calls.push({
        batch: [...batch],
        finish: (results) => {
          running--;
          resolve(results);
        },
        fail: (err) => {
          running--;
          reject(err);
        },
      });
    });
  return {
    calls,
    flush,
    mostRunning: () => mostRunning,
  };
}

const ok = (value: string): PromiseSettledResult<string> => ({ status: 'fulfilled', value });
const turn = () => new Promise((resolve) => setImmediate(resolve));

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await turn();
}

describe('GroupCommit', () => {
  it('puts the items of one turn into one flush, in the order they were added, and answers each with its own result', async () => {
    const f = manualFlush<number>();
    const batcher = new GroupCommit<number, string>({ flush: f.flush, maxBatchSize: 10 });
    const answers = [1, 2, 3].map((n) => batcher.add(n));
    await until(() => f.calls.length === 1);
    expect(f.calls[0]!.batch).toEqual([1, 2, 3]);
    f.calls[0]!.finish(f.calls[0]!.batch.map((n) => ok(`r${n}`)));
    await expect(Promise.all(answers)).resolves.toEqual(['r1', 'r2', 'r3']);
  });

  it('runs one flush at a time: what arrives while a flush runs waits and goes into the next, in order', async () => {
    const f = manualFlush<number>();
    const batcher = new GroupCommit<number, string>({ flush: f.flush, maxBatchSize: 10 });
    const first = batcher.add(1);
    await until(() => f.calls.length === 1);
    const later = [2, 3, 4].map((n) => batcher.add(n));
    await turn();
    await turn();
    expect(f.calls).toHaveLength(1);
    f.calls[0]!.finish([ok('r1')]);
    await expect(first).resolves.toBe('r1');
    await until(() => f.calls.length === 2);
    expect(f.calls[1]!.batch).toEqual([2, 3, 4]);
    f.calls[1]!.finish([ok('r2'), ok('r3'), ok('r4')]);
    await expect(Promise.all(later)).resolves.toEqual(['r2', 'r3', 'r4']);
    expect(f.mostRunning()).toBe(1);
  });

  it('runs at most maxConcurrentFlushes flushes at once when configured for more', async () => {
    const f = manualFlush<number>();
    const batcher = new GroupCommit<number, string>({
      flush: f.flush,
      maxBatchSize: 2,
      maxConcurrentFlushes: 2,
    });
    const answers = [1, 2, 3, 4, 5, 6].map((n) => batcher.add(n));
    await until(() => f.calls.length === 2);
    await turn();
    expect(f.calls.map((c) => c.batch)).toEqual([
      [1, 2],
      [3, 4],
    ]);
    f.calls[0]!.finish([ok('a'), ok('b')]);
    await until(() => f.calls.length === 3);
    expect(f.calls[2]!.batch).toEqual([5, 6]);
    f.calls[1]!.finish([ok('c'), ok('d')]);
    f.calls[2]!.finish([ok('e'), ok('f')]);
    await expect(Promise.all(answers)).resolves.toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    expect(f.mostRunning()).toBe(2);
  });

  it('cuts batches by count and by size, always taking at least one item', async () => {
    const f = manualFlush<string>();
    const batcher = new GroupCommit<string, string>({
      flush: f.flush,
      maxBatchSize: 3,
      maxBatchBytes: 10,
      sizeOf: (s) => s.length,
    });
    const items = ['aaaa', 'bbbb', 'cccc', 'x'.repeat(25), 'd', 'e', 'f', 'g'];
    const answers = items.map((s) => batcher.add(s));
    const batches: string[][] = [];
    while (batches.length < 4) {
      await until(() => f.calls.length > batches.length);
      const call = f.calls[batches.length]!;
      batches.push(call.batch);
      call.finish(call.batch.map((s) => ok(s.toUpperCase())));
    }
    expect(batches).toEqual([['aaaa', 'bbbb'], ['cccc'], ['x'.repeat(25)], ['d', 'e', 'f']]);
    await until(() => f.calls.length === 5);
    expect(f.calls[4]!.batch).toEqual(['g']);
    f.calls[4]!.finish([ok('G')]);
    await expect(Promise.all(answers)).resolves.toEqual(items.map((s) => s.toUpperCase()));
  });

  it('refuses an item beyond the pending bound at once with the configured error, and takes items again once earlier ones are answered', async () => {
    const f = manualFlush<number>();
    const batcher = new GroupCommit<number, string>({
      flush: f.flush,
      maxBatchSize: 10,
      maxPending: 2,
      overloaded: () => new Error('too many waiting'),
    });
    const a = batcher.add(1);
    await until(() => f.calls.length === 1);
    const b = batcher.add(2);
    await expect(batcher.add(3)).rejects.toThrow('too many waiting');
    expect(batcher.pending).toBe(2);
    f.calls[0]!.finish([ok('r1')]);
    await expect(a).resolves.toBe('r1');
    expect(batcher.pending).toBe(1);
    const c = batcher.add(4);
    await expect(batcher.add(5)).rejects.toThrow('too many waiting');
    await until(() => f.calls.length === 2);
    expect(f.calls[1]!.batch).toEqual([2]);
    f.calls[1]!.finish([ok('r2')]);
    await until(() => f.calls.length === 3);
    expect(f.calls[2]!.batch).toEqual([4]);
    f.calls[2]!.finish([ok('r4')]);
    await expect(Promise.all([b, c])).resolves.toEqual(['r2', 'r4']);
    expect(batcher.pending).toBe(0);
  });

  it('delivers a failed flush error to every caller of that batch, and the next batch still runs', async () => {
    const f = manualFlush<number>();
    const batcher = new GroupCommit<number, string>({ flush: f.flush, maxBatchSize: 10, maxPending: 3 });
    const failed = [1, 2, 3].map((n) => batcher.add(n));
    await until(() => f.calls.length === 1);
    const boom = new Error('database gone');
    f.calls[0]!.fail(boom);
    for (const p of failed) await expect(p).rejects.toBe(boom);
    expect(batcher.pending).toBe(0);
    const next = batcher.add(4);
    await until(() => f.calls.length === 2);
    f.calls[1]!.finish([ok('r4')]);
    await expect(next).resolves.toBe('r4');
  });

  it('answers each caller with its own outcome when the flush settles items one by one', async () => {
    const f = manualFlush<number>();
    const batcher = new GroupCommit<number, string>({ flush: f.flush, maxBatchSize: 10 });
    const answers = [1, 2, 3].map((n) => batcher.add(n));
    await until(() => f.calls.length === 1);
    const bad = new Error('row 2 cannot be stored');
    f.calls[0]!.finish([ok('r1'), { status: 'rejected', reason: bad }, ok('r3')]);
    await expect(answers[0]).resolves.toBe('r1');
    await expect(answers[1]).rejects.toBe(bad);
    await expect(answers[2]).resolves.toBe('r3');
  });

  it('keeps items with the same key out of one batch and out of flushes running side by side, in order', async () => {
    const f = manualFlush<{ id: string; n: number }>();
    const batcher = new GroupCommit<{ id: string; n: number }, string>({
      flush: f.flush,
      maxBatchSize: 10,
      maxConcurrentFlushes: 2,
      keyOf: (item) => item.id,
    });
    const items = [
      { id: 'a', n: 1 },
      { id: 'b', n: 2 },
      { id: 'a', n: 3 },
      { id: 'c', n: 4 },
    ];
    const answers = items.map((i) => batcher.add(i));
    await until(() => f.calls.length === 1);
    await turn();
    // The second 'a' cannot run beside the batch holding the first: it waits for that one to end.
    expect(f.calls).toHaveLength(1);
    expect(f.calls[0]!.batch.map((i) => i.n)).toEqual([1, 2, 4]);
    f.calls[0]!.finish([ok('1'), ok('2'), ok('4')]);
    await until(() => f.calls.length === 2);
    expect(f.calls[1]!.batch.map((i) => i.n)).toEqual([3]);
    f.calls[1]!.finish([ok('3')]);
    await expect(Promise.all(answers)).resolves.toEqual(['1', '2', '3', '4']);
  });

  it('answers every caller of a batch with an error when the flush returns the wrong number of results', async () => {
    const f = manualFlush<number>();
    const batcher = new GroupCommit<number, string>({ flush: f.flush, maxBatchSize: 10 });
    const answers = [1, 2].map((n) => batcher.add(n));
    await until(() => f.calls.length === 1);
    f.calls[0]!.finish([ok('only one')]);
    for (const p of answers) await expect(p).rejects.toThrow(/results/);
  });
});
