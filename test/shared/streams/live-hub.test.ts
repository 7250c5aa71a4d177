/**
 * The one live-stream hub (shared/streams/live-hub.ts) over an in-memory event log: replay then live,
 * the reset past the horizon, a slow reader caught up from the log, the stall rule, caps, the
 * shutdown end and the cursor rule. The cross-replica path on real PostgreSQL is in
 * live-hub-postgres.test.ts.
 */
import { InvalidArgumentError, ResourceExhaustedError } from '../../../shared/errors';
import { LiveHub, type LiveFrame, type LiveHubOptions } from '../../../shared/streams/live-hub';
import { MemoryEventLog, type MemoryLogEvent } from '../../../shared/streams/memory-event-log';
import { notHung, waitFor } from '../../support/wait';
import { TEST_HUB_OPTIONS, take } from './support';

type Frame = LiveFrame<MemoryLogEvent<string>>;

const hubs: LiveHub<MemoryLogEvent<string>, unknown>[] = [];

function hubOver(log: MemoryEventLog<string>, options: Partial<LiveHubOptions> = {}) {
  const hub = new LiveHub(log, { ...TEST_HUB_OPTIONS, ...options });
  hub.start();
  hubs.push(hub);
  return hub;
}

afterEach(() => {
  for (const hub of hubs.splice(0)) hub.stop();
});

const describeFrame = (f: Frame): string =>
  f.type === 'event' ? `${f.seq}:${f.event.value}` : `${f.type}@${f.seq}`;

describe('LiveHub', () => {
  it('when a watch starts without a cursor, its first frame is live with the current cursor, then new events', async () => {
    const log = new MemoryEventLog<string>(100);
    log.append('a', 'one');
    log.append('a', 'two');
    const hub = hubOver(log);
    const it = hub.watch({ channel: 'a', watch: null, capKey: 'k' })[Symbol.asyncIterator]();
    expect(describeFrame((await it.next()).value)).toBe('live@2');
    log.append('b', 'other channel');
    log.append('a', 'three');
    expect((await take(it, 1)).map(describeFrame)).toEqual(['3:three']);
  });

  it('a log numbered from a first seq: a watch on a channel with no event yet starts live below it and gets its first event, never a reset', async () => {
    const log = new MemoryEventLog<string>(100, { firstSeq: 1001 });
    const hub = hubOver(log);
    const it = hub.watch({ channel: 'a', watch: null, capKey: 'k' })[Symbol.asyncIterator]();
    expect(describeFrame((await it.next()).value)).toBe('live@1000');
    log.append('a', 'first');
    expect((await take(it, 1)).map(describeFrame)).toEqual(['1001:first']);
    await it.return?.();
    // That live cursor, kept while the event came: a resume replays it.
    const kept = { channel: 'a', watch: null, capKey: 'k', after: '1000' };
    const resumed = hub.watch(kept)[Symbol.asyncIterator]();
    expect((await take(resumed, 1)).map(describeFrame)).toEqual(['1001:first']);
    await resumed.return?.();
    // An earlier log's cursor, on a channel this log has not written: one reset, then its first event.
    const old = hub.watch({ channel: 'b', watch: null, capKey: 'k', after: '7' })[Symbol.asyncIterator]();
    expect(describeFrame((await old.next()).value)).toBe('reset@1000');
    log.append('b', 'b first');
    expect((await take(old, 1)).map(describeFrame)).toEqual(['1001:b first']);
    await old.return?.();
  });

  it('when a watch resumes after a cursor while events keep arriving, it gets every later event once, in order', async () => {
    const log = new MemoryEventLog<string>(1000);
    for (let i = 1; i <= 20; i++) log.append('a', `e${i}`);
    const hub = hubOver(log, { bufferSize: 4 });
    let live = false;
    const onLive = (): void => void (live = true);
    const watch = hub.watch({ channel: 'a', watch: null, capKey: 'k', after: '5', onLive });
    const it = watch[Symbol.asyncIterator]();
    const frames: Frame[] = [];
    // Appends interleave with the replay: the seam between replay and live must hold.
    for (let i = 21; i <= 40; i++) {
      frames.push(...(await take(it, 1)));
      log.append('a', `e${i}`);
    }
    frames.push(...(await take(it, 15)));
    expect(frames.map((f) => f.seq)).toEqual(Array.from({ length: 35 }, (_, i) => i + 6));
    expect(frames.every((f) => f.type === 'event')).toBe(true);
    // Asking for the next frame finishes the replay: the watch says it is live, and it is.
    const pending = it.next();
    await waitFor(() => live, 'the watch to go live');
    log.append('a', 'e41');
    expect(describeFrame((await pending).value)).toBe('41:e41');
  });

  it('when events commit while a resumed watch replays, the events both replayed and buffered arrive once', async () => {
    const log = new MemoryEventLog<string>(100);
    for (let i = 1; i <= 3; i++) log.append('a', `e${i}`);
    const hub = hubOver(log);
    // A second watcher keeps the channel read live while the first one replays.
    const other = hub.watch({ channel: 'a', watch: null, capKey: 'k' })[Symbol.asyncIterator]();
    await other.next();
    const it = hub.watch({ channel: 'a', watch: null, capKey: 'k', after: '0' })[Symbol.asyncIterator]();
    const first = it.next();
    // Appended while the replay's read is in flight: the live read buffers them too.
    for (let i = 4; i <= 6; i++) log.append('a', `e${i}`);
    const frames = [(await first).value as Frame, ...(await take(it, 5))];
    log.append('a', 'e7');
    frames.push(...(await take(it, 1)));
    expect(frames.map((f) => f.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('when a cursor is older than the horizon, the watch gets a reset frame at the log end, then carries on live', async () => {
    const log = new MemoryEventLog<string>(3);
    for (let i = 1; i <= 10; i++) log.append('a', `e${i}`);
    const hub = hubOver(log);
    const it = hub.watch({ channel: 'a', watch: null, capKey: 'k', after: '2' })[Symbol.asyncIterator]();
    expect(describeFrame((await it.next()).value)).toBe('reset@10');
    log.append('a', 'e11');
    expect((await take(it, 1)).map(describeFrame)).toEqual(['11:e11']);
  });

  it('when a cursor is past the log end (never handed out: made up, or from a wiped database), the watch gets a reset at the log end, then every new event', async () => {
    const log = new MemoryEventLog<string>(100);
    for (let i = 1; i <= 3; i++) log.append('a', `e${i}`);
    const hub = hubOver(log);
    const watch = hub.watch({ channel: 'a', watch: null, capKey: 'k', after: '1000000' });
    const it = watch[Symbol.asyncIterator]();
    // Found by the black-box probe: without the reset the watch said nothing, and e4 and e5 were
    // dropped as "not after the cursor".
    expect(describeFrame((await notHung(it.next(), 'the first frame')).value)).toBe('reset@3');
    log.append('a', 'e4');
    log.append('a', 'e5');
    expect((await take(it, 2)).map(describeFrame)).toEqual(['4:e4', '5:e5']);
  });

  it('when events the reader has not seen are erased, a resume from before them gets a reset, never a silent gap', async () => {
    const log = new MemoryEventLog<string>(100);
    for (const v of ['keep', 'secret', 'keep']) log.append('a', v);
    log.erase('a', (v) => v === 'secret');
    const hub = hubOver(log);
    const frames = await take(
      hub.watch({ channel: 'a', watch: null, capKey: 'k', after: '1' })[Symbol.asyncIterator](),
      1,
    );
    expect(frames.map(describeFrame)).toEqual(['reset@3']);
    expect(log.recent('a', 10).map((e) => e.value)).toEqual(['keep', 'keep']);
  });

  it('when a reader falls behind a burst larger than its buffer, it is caught up from the log with no gap and no duplicate', async () => {
    const log = new MemoryEventLog<string>(1000);
    const hub = hubOver(log, { bufferSize: 2 });
    const it = hub.watch({ channel: 'a', watch: null, capKey: 'k' })[Symbol.asyncIterator]();
    expect(describeFrame((await it.next()).value)).toBe('live@0');
    for (let i = 1; i <= 50; i++) log.append('a', `e${i}`);
    const frames = await take(it, 50);
    expect(frames.map((f) => f.seq)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(hub.watcherCount).toBe(1);
  });

  it('when a reader stops asking while events wait past the stall time, its watch fails with ResourceExhaustedError', async () => {
    let now = 0;
    const log = new MemoryEventLog<string>(1000);
    const hub = hubOver(log, {
      bufferSize: 2,
      stallMs: 1000,
      clock: { now: () => now, monotonic: () => now },
    });
    const it = hub.watch({ channel: 'a', watch: null, capKey: 'k' })[Symbol.asyncIterator]();
    await it.next();
    for (let i = 1; i <= 3; i++) log.append('a', `e${i}`);
    await waitFor(() => hub.watcherCount === 1 && log.recent('a', 5).length === 3, 'the burst');
    now = 5000;
    log.append('a', 'late');
    await waitFor(() => hub.watcherCount === 0, 'the stalled watcher to be dropped');
    await expect(it.next()).rejects.toThrow(new ResourceExhaustedError('stalled'));
  });

  it('when the overflow rule is close, a reader whose buffer is full is closed at one more, after what it had', async () => {
    const log = new MemoryEventLog<string>(100);
    const hub = hubOver(log, { bufferSize: 2, overflow: 'close' });
    const it = hub.watch({ channel: 'a', watch: null, capKey: 'k' })[Symbol.asyncIterator]();
    await it.next();
    log.append('a', 'e1');
    log.append('a', 'e2');
    await hub.flushed('a');
    expect(hub.watcherCount).toBe(1);
    log.append('a', 'e3');
    await hub.flushed('a');
    expect(hub.watcherCount).toBe(0);
    await expect(it.next()).rejects.toThrow(new ResourceExhaustedError('stalled'));
  });

  it('when the overflow rule is close, a resumed reader is not closed by events arriving during its replay', async () => {
    const log = new MemoryEventLog<string>(100);
    for (let i = 1; i <= 5; i++) log.append('a', `e${i}`);
    const hub = hubOver(log, { bufferSize: 2, overflow: 'close' });
    const it = hub.watch({ channel: 'a', watch: null, capKey: 'k', after: '0' })[Symbol.asyncIterator]();
    const frames = await take(it, 1);
    for (let i = 6; i <= 8; i++) log.append('a', `e${i}`);
    frames.push(...(await take(it, 7)));
    expect(frames.map((f) => f.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('when the hub stops with a failure, open watches and later ones end with it', async () => {
    const log = new MemoryEventLog<string>(10);
    const hub = hubOver(log);
    const it = hub.watch({ channel: 'a', watch: null, capKey: 'k' })[Symbol.asyncIterator]();
    await it.next();
    const pending = it.next();
    const failure = new Error('shutting down');
    hub.stop(failure);
    await expect(pending).rejects.toBe(failure);
    const late = hub.watch({ channel: 'a', watch: null, capKey: 'k' })[Symbol.asyncIterator]();
    await expect(late.next()).rejects.toBe(failure);
  });

  it('when the server or a key has its cap of watches, another watch is refused until one closes', async () => {
    const log = new MemoryEventLog<string>(10);
    const hub = hubOver(log, { maxWatchers: 3, maxWatchersPerKey: 2 });
    const mine = [1, 2].map(() =>
      hub.watch({ channel: 'a', watch: null, capKey: 'me' })[Symbol.asyncIterator](),
    );
    for (const it of mine) await it.next();
    expect(() => hub.watch({ channel: 'b', watch: null, capKey: 'me' })).toThrow(
      new ResourceExhaustedError('too many for you'),
    );
    const other = hub.watch({ channel: 'a', watch: null, capKey: 'you' })[Symbol.asyncIterator]();
    await other.next();
    expect(() => hub.watch({ channel: 'a', watch: null, capKey: 'third' })).toThrow(
      new ResourceExhaustedError('too many watches'),
    );
    await mine[0]!.return!();
    expect(hub.watcherCount).toBe(2);
    const again = hub.watch({ channel: 'a', watch: null, capKey: 'me' })[Symbol.asyncIterator]();
    expect((await again.next()).value.type).toBe('live');
  });

  it('when the hub stops, every open watch ends', async () => {
    const log = new MemoryEventLog<string>(10);
    const hub = hubOver(log);
    const it = hub.watch({ channel: 'a', watch: null, capKey: 'k' })[Symbol.asyncIterator]();
    await it.next();
    const pending = it.next();
    hub.stop();
    expect(await pending).toEqual({ done: true, value: undefined });
    expect(hub.watcherCount).toBe(0);
  });

  it('when a watch is aborted, its iterator finishes and its place is freed', async () => {
    const log = new MemoryEventLog<string>(10);
    const hub = hubOver(log);
    const controller = new AbortController();
    const watch = hub.watch({ channel: 'a', watch: null, capKey: 'k', signal: controller.signal });
    const it = watch[Symbol.asyncIterator]();
    await it.next();
    const pending = it.next();
    controller.abort();
    expect((await pending).done).toBe(true);
    expect(hub.watcherCount).toBe(0);
  });

  it.each(['x', '-1', '1.5', '1234567890123456', ' 1'])(
    'when the cursor is %j, watch refuses it with InvalidArgumentError naming the field',
    (after) => {
      const hub = hubOver(new MemoryEventLog<string>(10));
      let caught: unknown;
      try {
        hub.watch({ channel: 'a', watch: null, capKey: 'k', after });
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(InvalidArgumentError);
      expect((caught as InvalidArgumentError).field).toBe('after_cursor');
      expect(hub.watcherCount).toBe(0);
    },
  );

  it('when events carry emoji, CJK and RTL text, they reach the reader unchanged', async () => {
    const log = new MemoryEventLog<string>(10);
    const hub = hubOver(log);
    const it = hub.watch({ channel: 'user-😀', watch: null, capKey: 'k' })[Symbol.asyncIterator]();
    await it.next();
    log.append('user-😀', '👩‍👩‍👧 你好 שלום');
    expect((await take(it, 1)).map(describeFrame)).toEqual(['1:👩‍👩‍👧 你好 שלום']);
  });
});
