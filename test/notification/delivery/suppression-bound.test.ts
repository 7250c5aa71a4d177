/**
 * Every call of the suppression list is bounded (delivery/README.md, "Every suppression list call
 * bounded"), not only the lookup at submit and claim: add / addEntry, remove, removeByHand,
 * isSuppressed, reasonsOf and list wait at most `lookupTimeoutMs` for a store that does not answer,
 * and answer SuppressionLookupError `timeout` (UNAVAILABLE), counted in
 * `notification_suppression_lookup_timeouts_total{channel,stage}`. No database: fake timers, a
 * stand-in store whose every call the test holds.
 */
import { Registry } from 'prom-client';
import type { Channel } from '../../../services/notification/delivery/driver';
import {
  applySuppressionRule,
  SuppressionLookupError,
  Suppressions,
  type SuppressionStore,
} from '../../../services/notification/delivery/suppression';
import { InMemorySuppressionStore } from '../../../services/notification/delivery/suppression-memory-store';
import { FakeTimers } from '../../shared/monitoring/helpers';
import { Gate } from './support';

const BOUND_MS = 500;
const NUMBER = '+15551240001';

/** A database-like store: while `gate` is set, every call waits for it. */
class HeldStore implements SuppressionStore {
  readonly backend = 'database' as const;
  gate?: Gate;
  readonly entries = new InMemorySuppressionStore();
  private async held(): Promise<void> {
    if (this.gate) await this.gate.promise;
  }
  add: SuppressionStore['add'] = async (entry) => (await this.held(), this.entries.add(entry));
  remove: SuppressionStore['remove'] = async (...a) => (await this.held(), this.entries.remove(...a));
  reasonsOf: SuppressionStore['reasonsOf'] = async (...a) => (
    await this.held(),
    this.entries.reasonsOf(...a)
  );
  list: SuppressionStore['list'] = async (q) => (await this.held(), this.entries.list(q));
  findSuppressed = async (channel: Channel, recipients: readonly string[]): Promise<Set<string>> => {
    await this.held();
    return this.entries.findSuppressed(channel, recipients);
  };
}

async function turns(n = 3): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}

function track<T>(p: Promise<T>): { settled: boolean; value?: T; error?: unknown } {
  const state: { settled: boolean; value?: T; error?: unknown } = { settled: false };
  p.then(
    (value) => Object.assign(state, { settled: true, value }),
    (error: unknown) => Object.assign(state, { settled: true, error }),
  );
  return state;
}

function setup() {
  const store = new HeldStore();
  const timers = new FakeTimers();
  const registry = new Registry();
  const list = new Suppressions({ store, lookupTimeoutMs: BOUND_MS, timers, registry });
  /** The timeouts counted for `channel` at `stage`. */
  const timeouts = async (stage: string, channel = 'sms'): Promise<number> => {
    const m = await registry.getSingleMetric('notification_suppression_lookup_timeouts_total')!.get();
    return m.values.find((v) => v.labels.channel === channel && v.labels.stage === stage)?.value ?? 0;
  };
  return { store, timers, list, timeouts };
}

/** Each call of the list other than the grouped lookup, as a caller makes it. */
const CALLS: [string, (list: Suppressions) => Promise<unknown>][] = [
  ['add', (l) => l.add({ channel: 'sms', recipient: NUMBER, reason: 'stop_keyword', source: 'inbound:t' })],
  [
    'addEntry',
    (l) => l.addEntry({ channel: 'sms', recipient: NUMBER, reason: 'manual', source: 'api:caller' }),
  ],
  ['remove', (l) => l.remove('sms', NUMBER)],
  ['removeByHand', (l) => l.removeByHand('sms', NUMBER, 'api:caller')],
  ['isSuppressed', (l) => l.isSuppressed('sms', NUMBER)],
  ['reasonsOf', (l) => l.reasonsOf('sms', [NUMBER])],
  ['list', (l) => l.list('sms')],
];

describe('every call of the suppression list is bounded', () => {
  it.each(CALLS)(
    '%s, its store held, is rejected at the bound (not before) with a timeout, counted at stage api; the next call works',
    async (_name, call) => {
      const { store, timers, list, timeouts } = setup();
      store.gate = new Gate();
      const pending = track(call(list));
      await turns();
      timers.advance(BOUND_MS - 1);
      await turns();
      expect(pending.settled).toBe(false);
      timers.advance(1);
      await turns();
      expect(pending.error).toBeInstanceOf(SuppressionLookupError);
      expect(pending.error).toMatchObject({ reason: 'timeout', code: 'UNAVAILABLE' });
      const message = (pending.error as Error).message;
      expect(message).toBe(`suppression list call not answered within ${BOUND_MS} ms`);
      expect(message).not.toContain(NUMBER);
      expect(await timeouts('api')).toBe(1);
      expect(await timeouts('submit')).toBe(0);
      // The store answers at last; the list answers the next call at once, no timer left behind.
      store.gate.resolve();
      store.gate = undefined;
      await turns();
      expect(await list.isSuppressed('sms', '+15551240002')).toBe(false);
      expect(timers.pending).toBe(0);
    },
  );

  it('a call answered in time resolves as before, its timer cleared, nothing counted', async () => {
    const { timers, list, timeouts } = setup();
    expect(await list.add({ channel: 'sms', recipient: NUMBER, reason: 'manual', source: 'api:t' })).toBe(
      true,
    );
    expect(await list.isSuppressed('sms', NUMBER)).toBe(true);
    expect(await list.reasonsOf('sms', [NUMBER])).toEqual(new Map([[NUMBER, 'manual']]));
    await list.removeByHand('sms', NUMBER, 'api:t');
    expect(await list.remove('sms', NUMBER)).toBe(false);
    expect(timers.pending).toBe(0);
    expect(await timeouts('api')).toBe(0);
  });

  it("removeByHand's two statements share one bound: a held second statement times out at the bound from the start", async () => {
    const { store, timers, list } = setup();
    // A STOP: the removal deletes nothing, then the lookup (held) says why.
    await list.add({ channel: 'sms', recipient: NUMBER, reason: 'stop_keyword', source: 'inbound:t' });
    const findSuppressed = store.findSuppressed;
    const gate = new Gate();
    store.findSuppressed = async (...a) => (await gate.promise, findSuppressed(...a));
    const pending = track(list.removeByHand('sms', NUMBER, 'api:t'));
    await turns();
    timers.advance(BOUND_MS);
    await turns();
    expect(pending.error).toMatchObject({ reason: 'timeout' });
    gate.resolve();
    await turns();
    // Kept: a STOP is lifted only by START.
    expect(await store.entries.findSuppressed('sms', [NUMBER])).toEqual(new Set([NUMBER]));
  });

  it('the lookup counts its timeouts at the stage it was made: submit, claim, else api', async () => {
    const { store, timers, list, timeouts } = setup();
    store.gate = new Gate();
    const subject = { channel: 'sms' as const, recipients: [NUMBER], payload: {} };
    const pending = [
      track(applySuppressionRule(list, [subject], 'submit')),
      track(applySuppressionRule(list, [subject], 'claim')),
      track(applySuppressionRule(list, [subject], 'claim')),
      track(list.findSuppressed('sms', [NUMBER])),
    ];
    await turns();
    timers.advance(BOUND_MS);
    await turns();
    for (const p of pending) expect(p.error).toMatchObject({ reason: 'timeout' });
    expect(await timeouts('submit')).toBe(1);
    expect(await timeouts('claim')).toBe(2);
    expect(await timeouts('api')).toBe(1);
    store.gate.resolve();
    await turns();
  });

  it('a listing of every channel that times out is counted with channel `all`', async () => {
    const { store, timers, list, timeouts } = setup();
    store.gate = new Gate();
    const pending = track(list.list(undefined));
    await turns();
    timers.advance(BOUND_MS);
    await turns();
    expect(pending.error).toMatchObject({ reason: 'timeout' });
    expect(await timeouts('api', 'all')).toBe(1);
    store.gate.resolve();
    await turns();
  });

  it('the memory store is not bounded: no timer', async () => {
    const timers = new FakeTimers();
    const list = new Suppressions({ store: new InMemorySuppressionStore(), lookupTimeoutMs: 10, timers });
    await list.add({ channel: 'sms', recipient: NUMBER, reason: 'manual', source: 'api:t' });
    expect(await list.isSuppressed('sms', NUMBER)).toBe(true);
    expect(await list.reasonsOf('sms', [NUMBER])).toEqual(new Map([[NUMBER, 'manual']]));
    await list.removeByHand('sms', NUMBER, 'api:t');
    expect(timers.pending).toBe(0);
  });
});
