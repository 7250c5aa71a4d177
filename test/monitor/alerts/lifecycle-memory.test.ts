/** The alert lifecycle contract on the in-memory store, and the memory store's bounds at the bound. */
import { InMemoryAlertStore } from '../../../services/monitor/alerts/memory-store';
import { describeLifecycleContract } from './lifecycle-contract';
import { ManualClock } from '../../support/manual-clock';
import { AlertHub } from '../../../services/monitor/alerts/alert-hub';

describeLifecycleContract('the memory store', async () => ({
  store: (clock) => new InMemoryAlertStore({ clock }),
  reset: async () => undefined,
  close: async () => undefined,
}));

describe('InMemoryAlertStore bounds', () => {
  const alert = (i: number) => ({
    id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    alertName: 'a',
    kind: 'generic' as const,
    title: 'a',
    message: '',
    severity: 'high',
    context: {},
    sourceService: 's',
    firedAt: i,
  });

  it('keeps at most maxAlerts: a resolved alert leaves first, else the oldest', async () => {
    const store = new InMemoryAlertStore({ maxAlerts: 3 });
    for (let i = 1; i <= 3; i++) await store.trigger(alert(i), `k${i}`, {});
    await store.resolve(alert(2).id, 'x', 5);
    await store.trigger(alert(4), 'k4', {});
    expect(store.size).toBe(3);
    expect(await store.get(alert(2).id)).toBeUndefined();
    await store.trigger(alert(5), 'k5', {});
    expect(await store.get(alert(1).id)).toBeUndefined();
    expect(store.size).toBe(3);
  });

  it('keeps the newest maxTimeline entries of an alert', async () => {
    const store = new InMemoryAlertStore({ maxTimeline: 2 });
    await store.trigger(alert(1), 'k', {});
    for (let i = 0; i < 3; i++)
      await store.addTimeline(alert(1).id, { at: i, kind: 'updated', actor: '', detail: `${i}` });
    expect((await store.timeline(alert(1).id, 10)).map((t) => t.detail)).toEqual(['1', '2']);
  });

  it('keeps at most maxSilences: an ended silence leaves first, else the oldest', async () => {
    const clock = new ManualClock();
    const store = new InMemoryAlertStore({ maxSilences: 2, clock });
    const silence = (n: number, endsAt: number) => ({
      id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
      matchers: [{ name: 'a', op: '=' as const, value: 'b' }],
      startsAt: 0,
      endsAt,
      createdBy: 'ann',
      comment: '',
      createdAt: n,
      expiredAt: 0,
      reminded: [],
    });
    await store.createSilence(silence(1, clock.now() + 1000));
    await store.createSilence(silence(2, clock.now() - 1));
    await store.createSilence(silence(3, clock.now() + 1000));
    expect((await store.listSilences(undefined, 10)).map((s) => s.createdAt)).toEqual([3, 1]);
    await store.createSilence(silence(4, clock.now() + 1000));
    expect((await store.listSilences(undefined, 10)).map((s) => s.createdAt)).toEqual([4, 3]);
  });

  it('keeps at most maxLogRows notification-log rows: the oldest leave', async () => {
    const store = new InMemoryAlertStore({ maxLogRows: 2 });
    const key = (step: string) => ({ groupKey: 'g', receiver: 'r', step });
    for (const step of ['1', '2', '3']) {
      expect(await store.claimNotification(key(step), 'o', 60_000)).toBe(true);
      await store.completeNotification(key(step), 'o');
    }
    // Step 1 left the log: a claim of it succeeds again; 2 and 3 are still sent.
    expect(await store.claimNotification(key('3'), 'o', 60_000)).toBe(false);
    expect(await store.claimNotification(key('1'), 'o', 60_000)).toBe(true);
  });
});

describe('a kept silence whose pattern the monitor no longer runs', () => {
  it('mutes nothing and fails no trigger; a silence kept beside it still mutes', async () => {
    const clock = new ManualClock();
    const store = new InMemoryAlertStore({ clock });
    const silence = (n: number, value: string) => ({
      id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
      matchers: [{ name: 'host', op: '=~' as const, value }],
      startsAt: 0,
      endsAt: clock.now() + 3_600_000,
      createdBy: 'ann',
      comment: '',
      createdAt: n,
      expiredAt: 0,
      reminded: [],
    });
    // Kept before matchers.ts refused choices that multiply: written to the store as it was then.
    await store.createSilence(silence(1, 'a*a*a*a*a*a*a*a*a*a*'));
    const hub = new AlertHub({
      router: { dispatch: async () => undefined, shutdown: async () => undefined },
      recentSize: 10,
      maxWatchers: 1,
      watchBufferSize: 8,
      defaultSource: 'monitor',
      clock,
      lifecycle: { store },
    });
    const raise = (host: string) =>
      hub.raise({ kind: 'generic', title: `down ${host}`, severity: 'high', context: { host } });
    const loud = await raise(`${'a'.repeat(40)}b`);
    expect((await hub.lifecycle!.get(loud.id)).entry.silencedBy).toBe('');
    await store.createSilence(silence(2, 'db-[0-9]+'));
    const quiet = await raise('db-7');
    expect((await hub.lifecycle!.get(quiet.id)).entry.silencedBy).toBe(silence(2, '').id);
  });
});
