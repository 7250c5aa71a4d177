/**
 * InboundSmsWatchHub (the one live hub over the inbound SMS log, memory store): a reader that does
 * not read while more than its buffer arrives still gets every message in order (caught up from the
 * log); a reader that asks for nothing past the stall time, with more than its buffer waiting, is
 * closed with RESOURCE_EXHAUSTED (fake clock); a cursor behind what the cap removed gets a reset,
 * then the kept messages; the caps in total.
 */
import { ResourceExhaustedError } from '../../../../shared/errors';
import { InMemoryInboundSmsLog } from '../../../../services/notification/channels/sms/inbound-log-memory-store';
import {
  InboundSmsWatchHub,
  type InboundSmsFrame,
  type InboundSmsWatchHubOptions,
} from '../../../../services/notification/channels/sms/inbound-watch-hub';
import { epochClock } from '../../../support/manual-clock';
import { waitFor } from '../../../support/wait';

// The logs here start at the epoch, so their ids count from 1 (the cursors the tests name).
const hubs: InboundSmsWatchHub[] = [];
afterAll(() => {
  for (const hub of hubs) hub.stop();
});

function start(log: InMemoryInboundSmsLog, options: Partial<InboundSmsWatchHubOptions> = {}) {
  const hub = new InboundSmsWatchHub(log, {
    bufferSize: 4,
    maxWatchers: 10,
    maxWatchersPerCaller: 10,
    stallMs: 1000,
    ...options,
  });
  hub.start();
  hubs.push(hub);
  return hub;
}

let sid = 0;
const append = (log: InMemoryInboundSmsLog, body: string) =>
  log.append({ backend: 'twilio', providerId: `SM${++sid}`, from: '+15551230001', to: '+1555000', body });

const describeFrame = (f: InboundSmsFrame) => (f.type === 'message' ? f.message.body : `${f.type}:${f.id}`);

describe('InboundSmsWatchHub', () => {
  it('when more than the buffer arrives while the reader is not reading, it still gets every message in order', async () => {
    const log = new InMemoryInboundSmsLog({ clock: epochClock() });
    const hub = start(log, { bufferSize: 4, stallMs: 60_000 });
    const it = hub.watch('monitor')[Symbol.asyncIterator]();
    expect((await it.next()).value).toEqual({ type: 'live', id: 0 });
    // Exactly the buffer's worth, then past it.
    for (let i = 1; i <= 10; i++) await append(log, `m${i}`);
    const got: string[] = [];
    for (let i = 0; i < 10; i++) got.push(describeFrame((await it.next()).value as InboundSmsFrame));
    expect(got).toEqual(Array.from({ length: 10 }, (_, i) => `m${i + 1}`));
    await append(log, 'live');
    expect(describeFrame((await it.next()).value as InboundSmsFrame)).toBe('live');
    await it.return?.();
    expect(hub.watcherCount).toBe(0);
  });

  it('when a reader asks for nothing past the stall time with more than its buffer waiting, it is closed with RESOURCE_EXHAUSTED', async () => {
    let now = 0;
    const log = new InMemoryInboundSmsLog({ clock: epochClock() });
    const hub = start(log, { bufferSize: 4, stallMs: 1000, clock: { now: () => now, monotonic: () => now } });
    const it = hub.watch('monitor')[Symbol.asyncIterator]();
    expect((await it.next()).value).toMatchObject({ type: 'live' });
    // Past the stall time, exactly the buffer's worth waits: still open.
    now += 5000;
    for (let i = 0; i < 4; i++) await append(log, `b${i}`);
    await new Promise((resolve) => setImmediate(resolve));
    expect(hub.watcherCount).toBe(1);
    await append(log, 'one too many');
    await waitFor(() => hub.watcherCount === 0, 'the stalled watcher closed');
    await expect(it.next()).rejects.toBeInstanceOf(ResourceExhaustedError);
  });

  it('a cursor behind what the cap removed gets a reset at the end of the log, then live messages', async () => {
    const log = new InMemoryInboundSmsLog({ maxMessages: 2, clock: epochClock() });
    const hub = start(log);
    for (let i = 1; i <= 5; i++) await append(log, `c${i}`);
    const it = hub.watch('monitor', { afterId: '1' })[Symbol.asyncIterator]();
    expect((await it.next()).value).toEqual({ type: 'reset', id: 5 });
    await append(log, 'c6');
    expect(describeFrame((await it.next()).value as InboundSmsFrame)).toBe('c6');
    await it.return?.();
    // A cursor at the horizon replays what is kept, no reset.
    const again = hub.watch('monitor', { afterId: '4' })[Symbol.asyncIterator]();
    expect(describeFrame((await again.next()).value as InboundSmsFrame)).toBe('c5');
    await again.return?.();
  });

  it('max_watchers in total: at the bound one more is RESOURCE_EXHAUSTED before anything is read', async () => {
    const log = new InMemoryInboundSmsLog({ clock: epochClock() });
    const hub = start(log, { maxWatchers: 2, maxWatchersPerCaller: 2 });
    const a = hub.watch('a')[Symbol.asyncIterator]();
    const b = hub.watch('b')[Symbol.asyncIterator]();
    await a.next();
    await b.next();
    expect(() => hub.watch('c')).toThrow(ResourceExhaustedError);
    await a.return?.();
    const c = hub.watch('c')[Symbol.asyncIterator]();
    expect((await c.next()).value).toMatchObject({ type: 'live' });
    await b.return?.();
    await c.return?.();
  });
});
