/**
 * DeliveryWatchHub on real PostgreSQL (the database store and its sequencer): replay and live with no
 * gap and no duplicate, RESET after retention purged what a cursor needs, the buffer bound (a burst
 * never closes a reader that keeps up; a stopped reader is closed with RESOURCE_EXHAUSTED), the caps.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { ResourceExhaustedError, InvalidArgumentError } from '../../../shared/errors';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import { DeliveryRetention } from '../../../services/notification/delivery/retention';
import {
  DeliveryWatchHub,
  type DeliveryWatchFrame,
  type DeliveryWatchHubOptions,
} from '../../../services/notification/delivery/watch-hub';
import { notificationMigrations } from '../../../services/notification/migrations';
import { createTestDatabase } from '../../support/database';
import { ScriptedDriver, buildPipeline, newBackend, pollAndSettle, testConfig, waitFor } from './support';

const DAY = 24 * 60 * 60 * 1000;

let db: { url: string; drop(): Promise<void> };
let knex: Knex;
let store: DatabaseDeliveryStore;
const hubs: DeliveryWatchHub[] = [];

beforeAll(async () => {
  db = await createTestDatabase('dwatch');
  knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 6 }, silentLogger());
  await runMigrations(knex, notificationMigrations);
  // Retention is driven by hand-set times: the store takes the caller's clock.
  store = new DatabaseDeliveryStore(knex, { clock: 'caller' });
});

afterAll(async () => {
  for (const hub of hubs) await hub.stop();
  await knex?.destroy();
  await db?.drop();
});

async function startHub(options: Partial<DeliveryWatchHubOptions> = {}): Promise<DeliveryWatchHub> {
  const hub = new DeliveryWatchHub(store, {
    bufferSize: 16,
    readPageSize: 16,
    maxWatchers: 100,
    maxWatchersPerCaller: 10,
    stallMs: 10_000,
    sweepMs: 60_000,
    ...options,
  });
  hubs.push(hub);
  await hub.start();
  return hub;
}

/** A caller with its own scope and backend, sending SMS through a scripted driver. */
function caller() {
  const driver = new ScriptedDriver(newBackend(), 'sms');
  const scope = `scope-${randomUUID()}`;
  const { pipeline, clock } = buildPipeline(store, [driver]);
  const send = async () =>
    (
      await pipeline.submit({
        channel: 'sms',
        backend: driver.name,
        recipient: '+15551234567',
        payload: { text: 'x' },
        scope,
      })
    ).delivery.id;
  return { driver, scope, pipeline, clock, send };
}

/** Reads frames into `frames` until stopped; `error` is what ended the iteration, if anything. */
function collect(iterable: AsyncIterable<DeliveryWatchFrame>) {
  const frames: DeliveryWatchFrame[] = [];
  const state: { error: unknown; done: boolean } = { error: undefined, done: false };
  const running = (async () => {
    try {
      for await (const f of iterable) frames.push(f);
    } catch (err) {
      state.error = err;
    } finally {
      state.done = true;
    }
  })();
  return { frames, state, running };
}

const changes = (frames: DeliveryWatchFrame[]) =>
  frames.flatMap((f) => (f.type === 'change' ? [`${f.event.deliveryId}:${f.event.status}`] : []));

describe('DeliveryWatchHub on PostgreSQL', () => {
  it('when watched without a cursor, the first frame is LIVE and then each change arrives once', async () => {
    const hub = await startHub();
    const c = caller();
    const earlier = await c.send(); // accepted before the watch: its pending is not replayed
    await store.sequenceEvents();
    const controller = new AbortController();
    const w = collect(hub.watch(c.scope, { signal: controller.signal }));
    await waitFor(() => w.frames.length === 1, 'live frame');
    expect(w.frames[0]!.type).toBe('live');
    expect(Number(w.frames[0]!.cursor)).toBeGreaterThanOrEqual(await store.latestEventSeq());
    const id = await c.send();
    await pollAndSettle(c.pipeline);
    await waitFor(() => changes(w.frames).length >= 3, 'pending and both sent');
    controller.abort();
    await w.running;
    // The poll sends both (in claim order); the earlier delivery's pending came before the watch.
    const seen = changes(w.frames);
    expect(seen).toHaveLength(3);
    expect(seen[0]).toBe(`${id}:pending`);
    expect(new Set(seen.slice(1))).toEqual(new Set([`${earlier}:sent`, `${id}:sent`]));
    expect(w.state.error).toBeUndefined();
    expect(hub.watcherCount).toBe(0);
  });

  it('when resumed after a cursor mid-stream while sends continue, nothing is missed or repeated', async () => {
    const hub = await startHub({ bufferSize: 4, readPageSize: 4 });
    const c = caller();
    const first = new AbortController();
    const a = collect(hub.watch(c.scope, { signal: first.signal }));
    await waitFor(() => a.frames.length === 1);
    const ids: string[] = [];
    const sending = (async () => {
      for (let i = 0; i < 30; i++) {
        ids.push(await c.send());
        if (i % 5 === 4) await pollAndSettle(c.pipeline);
      }
      await pollAndSettle(c.pipeline);
    })();
    await waitFor(() => changes(a.frames).length >= 10, 'ten changes');
    first.abort();
    await a.running;
    // Resume after the tenth change; the first watch may have read a few more before it stopped.
    const cut = a.frames.filter((f) => f.type === 'change')[9]!;
    const seenBefore = changes(a.frames.slice(0, a.frames.indexOf(cut) + 1));
    const second = new AbortController();
    const b = collect(hub.watch(c.scope, { after: cut.cursor, signal: second.signal }));
    await sending;
    await waitFor(() => seenBefore.length + changes(b.frames).length >= 60, 'every change');
    second.abort();
    await b.running;
    const all = [...seenBefore, ...changes(b.frames)];
    expect(all).toHaveLength(60);
    expect(new Set(all).size).toBe(60);
    expect(new Set(all)).toEqual(new Set(ids.flatMap((id) => [`${id}:pending`, `${id}:sent`])));
    // Cursors strictly increase across the two watches.
    const cursors = [...a.frames.slice(1, a.frames.indexOf(cut) + 1), ...b.frames].map((f) =>
      Number(f.cursor),
    );
    for (let i = 1; i < cursors.length; i++) expect(cursors[i]).toBeGreaterThan(cursors[i - 1]!);
  });

  it('when retention purged events after the cursor, the watch sends RESET and carries on live', async () => {
    const hub = await startHub();
    const c = caller();
    const start = await store.latestEventSeq();
    const old = await c.send();
    await pollAndSettle(c.pipeline);
    await store.sequenceEvents();
    c.clock.advance(31 * DAY);
    const retention = new DeliveryRetention({
      store,
      config: { ...testConfig(), purge_batch_size: 1000 },
      clock: c.clock,
    });
    await retention.runOnce();
    const controller = new AbortController();
    const w = collect(hub.watch(c.scope, { after: String(start), signal: controller.signal }));
    await waitFor(() => w.frames.length === 1, 'reset');
    expect(w.frames[0]!.type).toBe('reset');
    expect(Number(w.frames[0]!.cursor)).toBeGreaterThanOrEqual(await store.eventHorizon(c.scope));
    const fresh = await c.send();
    await waitFor(() => w.frames.length === 2, 'live change after reset');
    controller.abort();
    await w.running;
    expect(changes(w.frames)).toEqual([`${fresh}:pending`]);
    expect(changes(w.frames).some((x) => x.startsWith(old))).toBe(false);
    // A cursor at the horizon replays normally (no second reset).
    const again = collect(hub.watch(c.scope, { after: w.frames[0]!.cursor }));
    await waitFor(() => again.frames.length === 1);
    expect(again.frames[0]!.type).toBe('change');
    await hub.stop();
    await again.running;
  });

  it('when a burst is larger than the buffer, a reader that keeps up gets all of it and stays open', async () => {
    const hub = await startHub({ bufferSize: 4, readPageSize: 4 });
    const c = caller();
    const controller = new AbortController();
    const w = collect(hub.watch(c.scope, { signal: controller.signal }));
    await waitFor(() => w.frames.length === 1);
    const ids = await Promise.all(Array.from({ length: 40 }, () => c.send()));
    await waitFor(() => changes(w.frames).length === 40, 'the burst');
    controller.abort();
    await w.running;
    expect(w.state.error).toBeUndefined();
    expect(new Set(changes(w.frames))).toEqual(new Set(ids.map((id) => `${id}:pending`)));
  });

  it('when a reader stops reading past the buffer bound and the stall time, it is closed with RESOURCE_EXHAUSTED', async () => {
    let now = 0;
    const hub = await startHub({
      bufferSize: 4,
      readPageSize: 4,
      stallMs: 1000,
      clock: { now: () => now, monotonic: () => now },
    });
    const c = caller();
    const iterator = hub.watch(c.scope)[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toMatchObject({ type: 'live' });
    // Exactly the buffer's worth waits: the watch is still fine.
    for (let i = 0; i < 4; i++) await c.send();
    await store.sequenceEvents();
    await waitFor(() => hub.watcherCount === 1);
    now += 5000;
    // One more than the buffer holds, after the stall time with no demand: closed.
    await c.send();
    await store.sequenceEvents();
    await waitFor(() => hub.watcherCount === 0, 'stalled watcher removed');
    await expect(iterator.next()).rejects.toBeInstanceOf(ResourceExhaustedError);
  });

  it('when the caps are reached, one more watch is RESOURCE_EXHAUSTED and a bad cursor is INVALID_ARGUMENT', async () => {
    const hub = await startHub({ maxWatchers: 3, maxWatchersPerCaller: 2 });
    const a = `cap-a-${randomUUID()}`;
    const b = `cap-b-${randomUUID()}`;
    const iterators: AsyncIterator<DeliveryWatchFrame>[] = [];
    const open = (scope: string) => {
      const it = hub.watch(scope)[Symbol.asyncIterator]();
      iterators.push(it);
      return it.next();
    };
    await open(a);
    await open(a);
    expect(() => hub.watch(a)).toThrow(ResourceExhaustedError);
    await open(b);
    expect(hub.watcherCount).toBe(3);
    expect(() => hub.watch(`cap-c-${randomUUID()}`)).toThrow(ResourceExhaustedError);
    expect(() => hub.watch(b, { after: 'abc' })).toThrow(InvalidArgumentError);
    expect(() => hub.watch(b, { after: '-1' })).toThrow(InvalidArgumentError);
    for (const it of iterators.splice(0)) await it.return?.();
    expect(hub.watcherCount).toBe(0);
    await open(a);
    expect(hub.watcherCount).toBe(1);
    await hub.stop();
  });

  it('when many writers commit at once, the new events get the next seqs with no gap and none left unsequenced', async () => {
    const c = caller();
    await store.sequenceEvents();
    const before = await store.latestEventSeq();
    await Promise.all(Array.from({ length: 50 }, () => c.send()));
    while ((await pollAndSettle(c.pipeline)) > 0);
    await store.sequenceEvents();
    const { rows } = (await knex.raw(
      'SELECT seq FROM delivery_events WHERE seq > ? OR seq IS NULL ORDER BY seq',
      [before],
    )) as { rows: Array<{ seq: string | null }> };
    expect(rows.map((r) => (r.seq === null ? null : Number(r.seq)))).toEqual(
      Array.from({ length: 100 }, (_, i) => before + 1 + i),
    );
    expect(await store.latestEventSeq()).toBe(before + 100);
  });

  it('while commits keep coming, passes start at least the interval apart: the commits meanwhile share one pass, in commit order', async () => {
    // Its own store: a 2 s interval, so the two sends below surely land inside it.
    const coalescing = new DatabaseDeliveryStore(knex, { sequencerIntervalMs: 2_000 });
    const passes: number[] = [];
    coalescing.onEventsSequenced((latest) => passes.push(latest));
    const driver = new ScriptedDriver(newBackend(), 'sms');
    const scope = `scope-${randomUUID()}`;
    const { pipeline } = buildPipeline(coalescing, [driver]);
    const send = async () =>
      (
        await pipeline.submit({
          channel: 'sms',
          backend: driver.name,
          recipient: '+15551234567',
          payload: {},
          scope,
        })
      ).delivery.id;
    const seqOf = async () =>
      new Map(
        (await coalescing.eventsAfter({ scopes: [scope], after: 0, limit: 10 })).map((e) => [
          e.deliveryId,
          e.seq,
        ]),
      );
    // The first commit after a quiet spell is numbered by a pass of its own, without waiting.
    const a = await send();
    await waitFor(() => passes.length >= 1, 'the first pass');
    const b = await send();
    const c = await send();
    await waitFor(() => passes.length >= 2, 'the second pass');
    const seqs = await seqOf();
    expect(seqs.get(b)).toBeGreaterThan(seqs.get(a)!);
    expect(seqs.get(c)).toBe(seqs.get(b)! + 1);
    // One pass numbered b and c together: no pass ended at b's seq.
    expect(passes.filter((latest) => latest >= seqs.get(b)!)).toEqual([seqs.get(c)]);
  });
});
