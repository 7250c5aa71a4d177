/**
 * The notification service's memory stores (store_backend: memory) across a restart: a client keeps
 * the cursor of its last event and resumes against a new process, whose log starts afresh. Each log
 * starts past every seq an earlier one handed out (`epochFirstSeq`), so the kept cursor is below the
 * new log's horizon and the watch answers a reset, never the new process's events under its numbers
 * (before, every process numbered from 1: the client resumed after its old cursor and silently missed
 * the new events numbered at or below it). Inbox events (WatchInbox and the admin SSE), delivery
 * events (WatchDeliveries) and inbound SMS; the cursors stay within the cursor rule (15 digits).
 */
import { randomUUID } from 'node:crypto';
import { InMemoryInboundSmsLog } from '../../services/notification/channels/sms/inbound-log-memory-store';
import { InboundSmsWatchHub } from '../../services/notification/channels/sms/inbound-watch-hub';
import { InMemoryDeliveryStore } from '../../services/notification/delivery/memory-store';
import type { NewDelivery } from '../../services/notification/delivery/store';
import { DeliveryWatchHub } from '../../services/notification/delivery/watch-hub';
import { InboxHub } from '../../services/notification/inbox/inbox-hub';
import { InMemoryInboxStore } from '../../services/notification/inbox/memory-store';
import { silentLogger } from '../../shared/logging/logger';
import type { Clock } from '../../shared/runtime/clock';
import { parseStreamCursor } from '../../shared/streams/cursor';

const START = Date.UTC(2026, 10, 29, 12, 0);
/** The clock of a process started `afterMs` after the first one. */
const startedAt = (afterMs: number): Clock => ({ now: () => START + afterMs, monotonic: () => 0 });

const CURSOR = { field: 'after_cursor', message: 'bad cursor' };
const stops: (() => unknown)[] = [];
afterAll(async () => {
  for (const stop of stops) await stop();
});

/** The first `count` frames of `frames`, as `what@cursor`. */
async function take<F>(frames: AsyncIterable<F>, count: number, show: (f: F) => string): Promise<string[]> {
  const out: string[] = [];
  for await (const f of frames) {
    out.push(show(f));
    if (out.length === count) break;
  }
  return out;
}
const cursorOf = (frame: string) => frame.slice(frame.lastIndexOf('@') + 1);

describe('inbox events across restarts', () => {
  async function inbox(clock: Clock) {
    const store = new InMemoryInboxStore(silentLogger(), { clock });
    const hub = new InboxHub(store, { bufferSize: 16 });
    await hub.start();
    stops.push(() => hub.stop());
    const send = (userId: string, title: string) =>
      store.send({ id: randomUUID(), userId, title, body: '', metadata: {}, createdAt: new Date(START) });
    return { store, hub, send };
  }

  it('a cursor of the earlier process gets a reset, never the new process’s events under its numbers', async () => {
    const before = await inbox(startedAt(0));
    // The client's last event: the first of two (titles in several scripts, as users write them).
    const kept = (await before.send('ユーザー', 'مرحبا 👋 0')).event.seq;
    await before.send('ユーザー', '新しい 1');

    // The restarted service, a second later, logs more events than the earlier one did.
    const after = await inbox(startedAt(1000));
    for (let i = 0; i < 3; i++) await after.send('ユーザー', `new ${i}`);
    const [resumed] = await take(
      after.hub.watch('ユーザー', { after: String(kept) }),
      1,
      (e) => `${e.type}@${e.cursor}`,
    );
    expect(resumed).toMatch(/^reset@/);
    // Past every number the earlier process handed out; a valid cursor (the admin SSE's id too).
    expect(Number(cursorOf(resumed!))).toBeGreaterThan(kept + 2);
    expect(parseStreamCursor(cursorOf(resumed!), CURSOR)).toBe(Number(cursorOf(resumed!)));
  });

  it('a user with no event in the new process: the old cursor gets a reset, then the next event', async () => {
    const before = await inbox(startedAt(0));
    const kept = (await before.send('bob', 'old')).event.seq;
    const after = await inbox(startedAt(1000));
    const frames = after.hub.watch('bob', { after: String(kept) })[Symbol.asyncIterator]();
    const first = (await frames.next()).value as { type: string; cursor: string };
    expect(first.type).toBe('reset');
    await after.send('bob', 'new 0');
    const next = (await frames.next()).value as { type: string; cursor: string };
    await frames.return?.();
    expect(next.type).toBe('sent');
    expect(Number(next.cursor)).toBeGreaterThan(Number(first.cursor));
  });
});

describe('delivery events across restarts', () => {
  async function deliveries(clock: Clock) {
    const store = new InMemoryDeliveryStore({ clock });
    const hub = new DeliveryWatchHub(store, {
      bufferSize: 16,
      readPageSize: 16,
      maxWatchers: 10,
      maxWatchersPerCaller: 10,
      stallMs: 60_000,
      sweepMs: 60_000,
    });
    await hub.start();
    stops.push(() => hub.stop());
    const create = (scope: string, n: number) =>
      store.create({
        id: randomUUID(),
        channel: 'email',
        backend: 'smtp',
        recipient: `r${n}@example.com`,
        maskedRecipient: `r*@example.com`,
        scope,
        idempotencyKey: null,
        contentHash: `h${n}`,
        payload: { n },
        createdAt: new Date(START),
      } satisfies NewDelivery);
    return { store, hub, create };
  }

  it('a WatchDeliveries cursor of the earlier process gets a reset, never the new process’s changes', async () => {
    const before = await deliveries(startedAt(0));
    await before.create('caller-a', 0);
    const kept = await before.store.latestEventSeq();
    await before.create('caller-a', 1);

    const after = await deliveries(startedAt(1000));
    for (let i = 0; i < 3; i++) await after.create('caller-a', 10 + i);
    const [resumed] = await take(
      after.hub.watch('caller-a', { after: String(kept) }),
      1,
      (f) => `${f.type}@${f.cursor}`,
    );
    expect(resumed).toMatch(/^reset@/);
    expect(Number(cursorOf(resumed!))).toBeGreaterThan(kept + 1);
    expect(parseStreamCursor(cursorOf(resumed!), CURSOR)).toBe(Number(cursorOf(resumed!)));
  });
});

describe('inbound SMS across restarts', () => {
  let sid = 0;
  function inbound(clock: Clock) {
    const log = new InMemoryInboundSmsLog({ clock });
    const hub = new InboundSmsWatchHub(log, {
      bufferSize: 16,
      maxWatchers: 10,
      maxWatchersPerCaller: 10,
      stallMs: 60_000,
    });
    hub.start();
    stops.push(() => hub.stop());
    const append = (body: string) =>
      log.append({ backend: 'twilio', providerId: `SM${++sid}`, from: '+15551230001', to: '+1555000', body });
    return { log, hub, append };
  }

  it('a reader’s id of the earlier process gets a reset, never the new process’s messages', async () => {
    const before = inbound(startedAt(0));
    const kept = (await before.append('ACK 1234 ✅'))!.id;
    await before.append('שלום');

    const after = inbound(startedAt(1000));
    for (let i = 0; i < 3; i++) await after.append(`new ${i}`);
    const [resumed] = await take(after.hub.watch('monitor', { afterId: String(kept) }), 1, (f) =>
      f.type === 'message' ? `message@${f.id}` : `${f.type}@${f.id}`,
    );
    expect(resumed).toMatch(/^reset@/);
    expect(Number(cursorOf(resumed!))).toBeGreaterThan(kept + 1);
    expect(String(Number(cursorOf(resumed!)))).toMatch(/^[0-9]{1,15}$/);
  });
});
