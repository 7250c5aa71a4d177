/**
 * The one behaviour suite of the alert lifecycle, run against every AlertStore (memory, PGlite,
 * PostgreSQL): dedup keys, acknowledge, resolve (one resolved notification), listing and the
 * timeline, silences (recurring, reminders), inhibition, grouping and the notification log. A fake
 * clock drives every time rule; the router records what would reach the channels.
 */
import { AlertHub, type AlertRouter, alertOf } from '../../../services/monitor/alerts/alert-hub';
import type { AlertLifecycleOptions } from '../../../services/monitor/alerts/lifecycle';
import type { AlertStore } from '../../../services/monitor/alerts/store';
import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from '../../../shared/errors';
import type { AlertRecord } from '../../../shared/monitoring/alerts/channels';
import { ManualClock } from '../../support/manual-clock';
import { randomUUID } from 'node:crypto';

class RecordingRouter implements AlertRouter {
  readonly records: AlertRecord[] = [];
  async dispatch(record: AlertRecord): Promise<void> {
    this.records.push(record);
  }
  async shutdown(): Promise<void> {}
}

/** What a backend's test file provides. */
export interface LifecycleBackend {
  /** A store over the backend (a fresh one or a shared one: tests use unique keys and labels). */
  store(clock: ManualClock): AlertStore;
  /** Empties the backend between tests (time rules read every open alert and silence). */
  reset(): Promise<void>;
  close(): Promise<void>;
}

const MIN = 60_000;

/** Registers the suite for one backend. */
export function describeLifecycleContract(name: string, open: () => Promise<LifecycleBackend>): void {
  describe(`alert lifecycle on ${name}`, () => {
    let backend: LifecycleBackend;
    beforeAll(async () => {
      backend = await open();
    });
    afterAll(async () => {
      await backend?.close();
    });
    beforeEach(async () => {
      await backend.reset();
    });

    function make(lifecycle: Omit<AlertLifecycleOptions, 'deliver' | 'clock' | 'logger' | 'store'> = {}) {
      const clock = new ManualClock(new Date('2026-11-30T12:00:00.000Z'));
      const router = new RecordingRouter();
      const hub = new AlertHub({
        router,
        recentSize: 50,
        maxWatchers: 3,
        watchBufferSize: 64,
        defaultSource: 'monitor',
        clock,
        lifecycle: { store: backend.store(clock), ...lifecycle },
      });
      const trigger = (
        title: string,
        extra: { dedupKey?: string; severity?: string; context?: Record<string, string> } = {},
      ) =>
        hub.raise({
          kind: 'generic',
          title,
          message: `${title} message`,
          severity: extra.severity ?? 'high',
          ...extra,
        });
      return { clock, router, hub, lc: hub.lifecycle, trigger };
    }
    const tag = () => randomUUID().slice(0, 8);

    /**
     * Replicas of one monitor: each `hub(router)` is a hub of its own over one shared store, all on one
     * fake clock. A claim's lease runs on the database's clock, which the fake clock does not move.
     */
    function replicas(lifecycle: Omit<AlertLifecycleOptions, 'deliver' | 'clock' | 'logger' | 'store'>) {
      const clock = new ManualClock(new Date('2026-11-30T12:00:00.000Z'));
      const store = backend.store(clock);
      const hub = (router: AlertRouter) =>
        new AlertHub({
          router,
          recentSize: 50,
          maxWatchers: 3,
          watchBufferSize: 64,
          defaultSource: 'monitor',
          clock,
          lifecycle: { store, ...lifecycle },
        });
      return { clock, hub };
    }

    describe('dedup keys and states', () => {
      it('when a trigger carries the key of an open alert, it updates that alert (count, last seen, message) and notifies once', async () => {
        const { hub, router, lc, clock } = make();
        const key = `disk-${tag()}`;
        const first = await hub.raise({
          kind: 'generic',
          title: 'disk full',
          message: '91%',
          severity: 'high',
          dedupKey: key,
        });
        clock.advance(MIN);
        const second = await hub.raise({
          kind: 'generic',
          title: 'disk full',
          message: '97% 🔥',
          severity: 'critical',
          dedupKey: key,
          context: { mount: '/var' },
        });
        await hub.settled();
        expect(second.id).toBe(first.id);
        const { entry, timeline } = await lc.get(first.id);
        expect(entry).toMatchObject({ state: 'triggered', count: 2, dedupKey: key, lastSeenAt: clock.now() });
        expect(entry.alert.message).toBe('97% 🔥');
        expect(entry.alert.severity).toBe('critical');
        // The latest trigger's context, and the labels made of it.
        expect(entry.alert.context).toEqual({ mount: '/var' });
        expect(entry.labels.mount).toBe('/var');
        expect(router.records).toHaveLength(1);
        expect(timeline.map((t) => t.kind)).toEqual(['triggered', 'notified', 'updated']);
      });

      it('when triggers carry no key, each is its own alert and its key is its id', async () => {
        const { router, lc, trigger, hub } = make();
        const a = await trigger('cpu');
        const b = await trigger('cpu');
        await hub.settled();
        expect(a.id).not.toBe(b.id);
        expect((await lc.get(a.id)).entry.dedupKey).toBe(a.id);
        expect(router.records).toHaveLength(2);
      });

      it('when a trigger comes after its key was resolved, it opens a new alert', async () => {
        const { lc, trigger } = make();
        const key = `k-${tag()}`;
        const a = await trigger('x', { dedupKey: key });
        await lc.resolve(a.id, 'ann');
        const b = await trigger('x', { dedupKey: key });
        expect(b.id).not.toBe(a.id);
        expect((await lc.get(b.id)).entry.state).toBe('triggered');
      });

      it('labels are the context plus alertname, severity (lower case) and source_service', async () => {
        const { lc, hub } = make();
        const a = await hub.raise({
          kind: 'generic',
          title: 'T',
          severity: 'HIGH',
          context: { host: 'db-1', severity: 'ignored' },
          sourceService: 'billing',
        });
        expect((await lc.get(a.id)).entry.labels).toEqual({
          host: 'db-1',
          alertname: 'T',
          severity: 'high',
          source_service: 'billing',
        });
      });

      it('when an alert is acknowledged, later triggers of its key notify nobody and the timeline names who and the note', async () => {
        const { lc, trigger, router, hub } = make();
        const key = `k-${tag()}`;
        const a = await trigger('db down', { dedupKey: key });
        const acked = await lc.acknowledge(a.id, 'ann@example.com', 'looking — 看看');
        expect(acked.state).toBe('acknowledged');
        await trigger('db down', { dedupKey: key });
        await hub.settled();
        expect(router.records).toHaveLength(1);
        const { entry, timeline } = await lc.get(a.id);
        expect(entry).toMatchObject({ state: 'acknowledged', count: 2, acknowledgedBy: 'ann@example.com' });
        expect(timeline.find((t) => t.kind === 'acknowledged')).toMatchObject({
          actor: 'ann@example.com',
          detail: 'looking — 看看',
        });
        await expect(lc.acknowledge(a.id, 'bob')).rejects.toBeInstanceOf(FailedPreconditionError);
      });

      it('when an alert is resolved, exactly one resolved notification goes out, and resolving again is refused', async () => {
        const { lc, trigger, router, hub } = make();
        const a = await trigger('api 5xx');
        await lc.acknowledge(a.id, 'ann');
        const r = await lc.resolve(a.id, 'bob');
        await expect(lc.resolve(a.id, 'bob')).rejects.toBeInstanceOf(FailedPreconditionError);
        await hub.settled();
        expect(r).toMatchObject({ state: 'resolved', resolvedBy: 'bob' });
        expect(router.records).toHaveLength(2);
        // The resolved notification is the same alert (webhook body: its id, RESOLVED) under a record id
        // of its own, so channels that key messages by it (the notification channel's idempotency
        // key) send it instead of taking it for a retry of the firing one.
        expect(router.records[1]).toMatchObject({
          id: `${a.id}:resolved`,
          context: { alert_state: 'resolved' },
        });
        expect(alertOf(router.records[1]!)).toMatchObject({ id: a.id, state: 'resolved' });
        // Read back from a store (held, or resent from the outbox after a crash): the same alert.
        const stored = JSON.parse(JSON.stringify(router.records[1])) as AlertRecord;
        expect(alertOf(stored)).toMatchObject({ id: a.id, state: 'resolved', title: a.title });
        expect(alertOf(JSON.parse(JSON.stringify(router.records[0])) as AlertRecord)).toMatchObject({
          id: a.id,
          kind: 'generic',
        });
        expect(alertOf(JSON.parse(JSON.stringify(router.records[0])) as AlertRecord).state).toBeUndefined();
        const kinds = (await lc.get(a.id)).timeline.map((t) => t.kind);
        expect(kinds).toEqual(['triggered', 'notified', 'acknowledged', 'resolved', 'notified']);
      });

      it('when the source resolves its key (hub.resolve), the open alert closes with one resolved notification', async () => {
        const { hub, router, lc } = make();
        const key = `slo:${tag()}`;
        await hub.sendAlert('SLO burn', 'too slow', 'critical', { slo: 'checkout', dedup_key: key });
        await hub.resolve(key);
        await hub.resolve(key);
        await hub.settled();
        expect(router.records).toHaveLength(2);
        const [entry] = await lc.list(
          { matchers: [{ name: 'slo', op: '=', value: 'checkout' }], states: ['resolved'] },
          undefined,
          10,
        );
        expect(entry).toMatchObject({ dedupKey: key, resolvedBy: 'source' });
      });

      it('bad input is INVALID_ARGUMENT or NOT_FOUND naming the field, and nothing is kept', async () => {
        const { lc, trigger } = make();
        await expect(trigger('x', { dedupKey: 'k'.repeat(256) })).rejects.toBeInstanceOf(
          InvalidArgumentError,
        );
        await expect(lc.get('nope')).rejects.toBeInstanceOf(InvalidArgumentError);
        await expect(lc.get(randomUUID())).rejects.toBeInstanceOf(NotFoundError);
        const a = await trigger('y');
        await expect(lc.acknowledge(a.id, '  ')).rejects.toThrow(/acknowledged_by/);
        await expect(lc.resolve(a.id, 'x'.repeat(257))).rejects.toThrow(/resolved_by/);
      });
    });

    describe('listing', () => {
      it('filters by state, severity and label matchers, newest first, paged by cursor', async () => {
        const { lc, trigger, clock } = make();
        const run = tag();
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) {
          clock.advance(1000);
          ids.push(
            (await trigger(`t${i}`, { severity: i % 2 ? 'low' : 'critical', context: { run, n: String(i) } }))
              .id,
          );
        }
        await lc.acknowledge(ids[4]!, 'ann');
        const mine = [{ name: 'run', op: '=' as const, value: run }];
        const crit = await lc.list({ severities: ['CRITICAL'], matchers: mine }, undefined, 10);
        expect(crit.map((e) => e.alert.id)).toEqual([ids[4], ids[2], ids[0]]);
        const triggered = await lc.list(
          { states: ['triggered'], severities: ['critical'], matchers: mine },
          undefined,
          10,
        );
        expect(triggered.map((e) => e.alert.id)).toEqual([ids[2], ids[0]]);
        const re = await lc.list(
          { matchers: [...mine, { name: 'n', op: '=~', value: '[13]' }] },
          undefined,
          10,
        );
        expect(re.map((e) => e.alert.id)).toEqual([ids[3], ids[1]]);
        const page1 = await lc.list({ matchers: mine }, undefined, 2);
        const last = page1[1]!;
        const page2 = await lc.list(
          { matchers: mine },
          { firedAt: last.alert.firedAt, id: last.alert.id },
          2,
        );
        expect([...page1, ...page2].map((e) => e.alert.id)).toEqual([ids[4], ids[3], ids[2], ids[1]]);
      });
    });

    describe('silences', () => {
      it('a silenced alert is kept and visible (silenced by which silence) but not notified; expiring the silence notifies it then', async () => {
        const { lc, trigger, router, hub } = make();
        const run = tag();
        const s = await lc.createSilence({
          matchers: [{ name: 'run', op: '=', value: run }],
          startsAt: 0,
          endsAt: Date.parse('2026-12-01T00:00:00Z'),
          createdBy: 'ann',
          comment: 'maintenance',
        });
        const a = await trigger('db down', { context: { run } });
        await hub.settled();
        expect(router.records).toHaveLength(0);
        let got = await lc.get(a.id);
        expect(got.entry).toMatchObject({ state: 'triggered', silencedBy: s.id });
        expect(got.timeline.find((t) => t.kind === 'silenced')).toMatchObject({ actor: s.id });
        await lc.expireSilence(s.id);
        await hub.settled();
        expect(router.records.map((r) => r.id)).toEqual([a.id]);
        got = await lc.get(a.id);
        expect(got.entry.silencedBy).toBe('');
        expect(got.timeline.map((t) => t.kind)).toEqual(['triggered', 'silenced', 'unmuted', 'notified']);
        expect(lc.silenceState(await lc.getSilence(s.id))).toBe('expired');
      });

      it('when a silence ends by time while the alert still fires, the alert is notified at the next tick', async () => {
        const { lc, trigger, router, hub, clock } = make();
        const run = tag();
        await lc.createSilence({
          matchers: [{ name: 'run', op: '=', value: run }],
          startsAt: 0,
          endsAt: clock.now() + 10 * MIN,
          createdBy: 'ann',
          comment: '',
        });
        await trigger('x', { context: { run } });
        await lc.tick();
        await hub.settled();
        expect(router.records).toHaveLength(0);
        clock.advance(10 * MIN);
        await lc.tick();
        await hub.settled();
        expect(router.records).toHaveLength(1);
      });

      it('a recurring silence holds only within its weekly window in its time zone', async () => {
        const { lc, trigger, clock } = make();
        const run = tag();
        // Monday 2026-11-30 12:00 UTC is 13:00 in Paris: the window is Mondays 12:30-14:00 Paris time.
        await lc.createSilence({
          matchers: [{ name: 'run', op: '=', value: run }],
          startsAt: 0,
          endsAt: clock.now() + 30 * 24 * 60 * MIN,
          createdBy: 'ann',
          comment: 'weekly',
          recurrence: { days: ['mon'], start: '12:30', end: '14:00', timeZone: 'Europe/Paris' },
        });
        const inside = await trigger('a', { context: { run } });
        clock.advance(90 * MIN); // 14:30 Paris
        const outside = await trigger('b', { context: { run } });
        expect((await lc.get(inside.id)).entry.silencedBy).not.toBe('');
        expect((await lc.get(outside.id)).entry.silencedBy).toBe('');
      });

      it('refuses catastrophic or malformed regexes, bad windows and bad ranges with INVALID_ARGUMENT', async () => {
        const { lc, clock } = make();
        const base = { startsAt: 0, endsAt: clock.now() + MIN, createdBy: 'ann', comment: '' };
        for (const value of ['(a+)+$', '(a|aa)*', '(?=a)a', '(a)\\1', 'x'.repeat(257), '(']) {
          await expect(
            lc.createSilence({ ...base, matchers: [{ name: 'host', op: '=~', value }] }),
          ).rejects.toBeInstanceOf(InvalidArgumentError);
        }
        await expect(lc.createSilence({ ...base, matchers: [] })).rejects.toBeInstanceOf(
          InvalidArgumentError,
        );
        await expect(
          lc.createSilence({
            ...base,
            endsAt: clock.now() - 1,
            matchers: [{ name: 'a', op: '=', value: 'b' }],
          }),
        ).rejects.toThrow(/ends_at/);
        await expect(
          lc.createSilence({
            ...base,
            matchers: [{ name: 'a', op: '=', value: 'b' }],
            recurrence: { days: ['mon'], start: '10:00', end: '09:00', timeZone: 'Mars/Base' },
          }),
        ).rejects.toBeInstanceOf(InvalidArgumentError);
        // A safe regex of the same shape is accepted.
        await expect(
          lc.createSilence({ ...base, matchers: [{ name: 'host', op: '=~', value: 'db-[0-9]+' }] }),
        ).resolves.toBeDefined();
      });

      it('reminds the creator once before the silence ends and once when it has hidden a firing alert for long', async () => {
        const reminders: { to: string; subject: string }[] = [];
        const { lc, trigger, clock } = make({
          reminders: { expiryLeadMs: 30 * MIN, longHiddenMs: 60 * MIN },
          remind: async (r) => void reminders.push(r),
        });
        const run = tag();
        const s = await lc.createSilence({
          matchers: [{ name: 'run', op: '=', value: run }],
          startsAt: 0,
          endsAt: clock.now() + 120 * MIN,
          createdBy: 'ann@example.com',
          comment: 'deploy',
        });
        await trigger('x', { context: { run } });
        await lc.tick();
        expect(reminders).toHaveLength(0);
        clock.advance(61 * MIN);
        await lc.tick();
        await lc.tick();
        expect(reminders).toEqual([
          expect.objectContaining({
            to: 'ann@example.com',
            subject: expect.stringMatching(/hidden 1 firing/),
          }),
        ]);
        clock.advance(30 * MIN);
        await lc.tick();
        await lc.tick();
        expect(reminders).toHaveLength(2);
        expect(reminders[1]!.subject).toMatch(new RegExp(`Silence ${s.id} ends`));
      });
    });

    describe('inhibition', () => {
      const rules = [
        {
          sourceMatchers: [{ name: 'alertname', op: '=' as const, value: 'NodeDown' }],
          targetMatchers: [{ name: 'severity', op: '=' as const, value: 'warning' }],
          equal: ['host'],
        },
      ];

      it('a firing source mutes targets sharing the equal labels (recorded), never itself nor other hosts; its resolution notifies them', async () => {
        const { lc, trigger, router, hub } = make({ inhibitRules: rules });
        const host = `h-${tag()}`;
        const source = await trigger('NodeDown', { severity: 'warning', context: { host } });
        const target = await trigger('DiskSlow', { severity: 'warning', context: { host } });
        const other = await trigger('DiskSlow', { severity: 'warning', context: { host: `${host}-b` } });
        await hub.settled();
        expect(router.records.map((r) => r.id)).toEqual([source.id, other.id]);
        const t = await lc.get(target.id);
        expect(t.entry.inhibitedBy).toBe(source.id);
        expect(t.timeline.find((e) => e.kind === 'inhibited')).toMatchObject({ actor: source.id });
        expect((await lc.get(source.id)).entry.inhibitedBy).toBe('');
        await lc.resolve(source.id, 'ann');
        await lc.tick();
        await hub.settled();
        expect(router.records.map((r) => r.id)).toEqual([
          source.id,
          other.id,
          `${source.id}:resolved`,
          target.id,
        ]);
      });

      it('a source that fires after its target mutes the open target at once (recorded) and unmutes it when it resolves', async () => {
        const { lc, trigger, router, hub } = make({ inhibitRules: rules });
        const host = `h-${tag()}`;
        const target = await trigger('DiskSlow', { severity: 'warning', context: { host } });
        const source = await trigger('NodeDown', { severity: 'critical', context: { host } });
        await hub.settled();
        expect((await lc.get(target.id)).entry.inhibitedBy).toBe(source.id);
        await lc.resolve(source.id, 'ann');
        await lc.tick();
        await hub.settled();
        const kinds = (await lc.get(target.id)).timeline.map((t) => t.kind);
        // It was notified before its source fired: unmuted, it is not sent a second time.
        expect(kinds).toEqual(['triggered', 'notified', 'inhibited', 'unmuted']);
        expect(router.records.filter((r) => r.id === target.id)).toHaveLength(1);
      });
    });

    describe('grouping', () => {
      const grouping = {
        groupBy: ['cluster'],
        groupWaitMs: 30_000,
        groupIntervalMs: 5 * MIN,
        repeatIntervalMs: 4 * 60 * MIN,
      };

      it('1,000 alerts of one outage make one notification listing them; new ones at group_interval; repeats only after repeat_interval; acknowledged ones stop', async () => {
        const { lc, trigger, router, hub, clock } = make({ grouping });
        const cluster = `c-${tag()}`;
        const ids: string[] = [];
        for (let i = 0; i < 1000; i++)
          ids.push((await trigger(`pod ${i} down`, { context: { cluster } })).id);
        await lc.tick();
        expect(router.records).toHaveLength(0);
        clock.advance(30_000);
        await lc.tick();
        await hub.settled();
        expect(router.records).toHaveLength(1);
        expect(router.records[0]!.context).toMatchObject({ cluster, alert_count: '1000' });
        expect(router.records[0]!.title).toBe(`[FIRING:1000] cluster=${cluster}`);
        expect(router.records[0]!.message).toMatch(/and 950 more$/);
        expect((await lc.get(ids[0]!)).entry.notified).toBe(true);
        // Nothing new: nothing at the next group_interval.
        clock.advance(5 * MIN);
        await lc.tick();
        expect(router.records).toHaveLength(1);
        await trigger('one more', { context: { cluster } });
        clock.advance(5 * MIN);
        await lc.tick();
        await hub.settled();
        expect(router.records).toHaveLength(2);
        expect(router.records[1]!.context.alert_count).toBe('1001');
        // All acknowledged: no repeat after repeat_interval.
        for (const e of await lc.list(
          { matchers: [{ name: 'cluster', op: '=', value: cluster }] },
          undefined,
          2000,
        ))
          await lc.acknowledge(e.alert.id, 'ann');
        clock.advance(4 * 60 * MIN);
        await lc.tick();
        await hub.settled();
        expect(router.records).toHaveLength(2);
      });

      it('acknowledging part of a notified group sends nothing new at the next group_interval', async () => {
        const { lc, trigger, router, hub, clock } = make({ grouping });
        const cluster = `c-${tag()}`;
        const a = await trigger('a', { context: { cluster } });
        await trigger('b', { context: { cluster } });
        clock.advance(30_000);
        await lc.tick();
        await lc.acknowledge(a.id, 'ann');
        clock.advance(5 * MIN);
        await lc.tick();
        await hub.settled();
        expect(router.records).toHaveLength(1);
      });

      it('the group notification goes out at the tier of its most urgent member (a P1 summary would wait for business hours)', async () => {
        const { lc, trigger, router, hub, clock } = make({ grouping });
        const cluster = `c-${tag()}`;
        await trigger('a', { context: { cluster, tier: 'P2_DIGEST' } });
        await trigger('b', { context: { cluster, tier: 'P0_PAGE' } });
        clock.advance(30_000);
        await lc.tick();
        await hub.settled();
        expect(router.records).toHaveLength(1);
        expect(router.records[0]!.context).toMatchObject({ cluster, tier: 'P0_PAGE', alert_count: '2' });
      });

      it('a lifecycle that did not see the triggers (another replica, a restarted monitor) sends their group when due, once; notified alerts are not sent again', async () => {
        const { lc, trigger, router, hub, clock } = make({ grouping });
        const cluster = `c-${tag()}`;
        await trigger('a', { context: { cluster } });
        await trigger('b', { context: { cluster } });
        const other = () => {
          const r = new RecordingRouter();
          const h = new AlertHub({
            router: r,
            recentSize: 50,
            maxWatchers: 3,
            watchBufferSize: 64,
            defaultSource: 'monitor',
            clock,
            lifecycle: { store: lc.store, grouping },
          });
          return { router: r, hub: h, lc: h.lifecycle };
        };
        const replica = other();
        await replica.lc.tick();
        expect(replica.router.records).toHaveLength(0);
        clock.advance(30_000);
        await replica.lc.tick();
        await replica.hub.settled();
        expect(replica.router.records.map((r) => r.title)).toEqual([`[FIRING:2] cluster=${cluster}`]);
        // The monitor that took the triggers flushes the same group: the log lets one send.
        await lc.tick();
        await hub.settled();
        expect(router.records).toHaveLength(0);
        // A monitor started afterwards (a restart) finds the group notified: nothing before repeat_interval.
        const restarted = other();
        await restarted.lc.tick();
        clock.advance(5 * MIN);
        await restarted.lc.tick();
        await restarted.hub.settled();
        expect(restarted.router.records).toHaveLength(0);
      });

      it('two monitors flushing one group either side of a repeat period boundary still send it once, and repeat it once per repeat_interval', async () => {
        const short = {
          groupBy: ['cluster'],
          groupWaitMs: 30_000,
          groupIntervalMs: 30_000,
          repeatIntervalMs: MIN,
        };
        const { lc, trigger, router, hub, clock } = make({ grouping: short });
        const r2 = new RecordingRouter();
        const other = new AlertHub({
          router: r2,
          recentSize: 50,
          maxWatchers: 3,
          watchBufferSize: 64,
          defaultSource: 'monitor',
          clock,
          lifecycle: { store: lc.store, grouping: short },
        });
        const cluster = `c-${tag()}`;
        clock.advance(25_000); // 12:00:25
        await trigger('a', { context: { cluster } });
        clock.advance(25_000); // 12:00:50: the other monitor first sees the group
        await other.lifecycle.tick();
        clock.advance(5_000); // 12:00:55: the first one's group is due
        await lc.tick();
        clock.advance(25_000); // 12:01:20: the other's is (a minute later than 12:00:55 by the epoch)
        await other.lifecycle.tick();
        await hub.settled();
        await other.settled();
        expect(router.records.length + r2.records.length).toBe(1);
        // Repeats: each monitor ticks every 10 s for 3 minutes; one repeat per minute between them.
        for (let i = 0; i < 18; i++) {
          clock.advance(10_000);
          await lc.tick();
          await other.lifecycle.tick();
        }
        await hub.settled();
        await other.settled();
        expect(router.records.length + r2.records.length).toBe(4);
      });

      it('a monitor that dies between the log row of a group and the send (its channel hangs) leaves the group to another, which sends it once the lease ran out, once', async () => {
        const quick = {
          groupBy: ['cluster'],
          groupWaitMs: 30_000,
          groupIntervalMs: 30_000,
          repeatIntervalMs: 60 * MIN,
        };
        // The lease: long enough that the survivor's first tick falls inside it on a loaded machine (50
        // ms did not, in CI).
        const { clock, hub } = replicas({ grouping: quick, claimLeaseMs: 3_000 });
        const handed: AlertRecord[] = [];
        const dying = hub({
          dispatch: (record) => {
            handed.push(record);
            return new Promise<void>(() => undefined); // the webhook hangs; then the process is killed
          },
          shutdown: async () => undefined,
        });
        const survivorRouter = new RecordingRouter();
        const survivor = hub(survivorRouter);
        const cluster = `c-${tag()}`;
        for (const t of ['a', 'b'])
          await dying.raise({ kind: 'generic', title: t, severity: 'high', context: { cluster } });
        await survivor.lifecycle.tick();
        clock.advance(30_000);
        await dying.lifecycle.tick(); // the log row, then the send that never ends
        expect(handed).toHaveLength(1);
        await survivor.lifecycle.tick(); // the dying one's lease still runs: nothing
        expect(survivorRouter.records).toHaveLength(0);
        await new Promise((r) => setTimeout(r, 3_200)); // the lease, on the database's clock
        clock.advance(30_000);
        await survivor.lifecycle.tick();
        await survivor.settled();
        expect(survivorRouter.records.map((r) => r.title)).toEqual([`[FIRING:2] cluster=${cluster}`]);
        for (let i = 0; i < 3; i++) {
          clock.advance(30_000);
          await survivor.lifecycle.tick();
        }
        await survivor.settled();
        expect(survivorRouter.records).toHaveLength(1);
      });

      it("a monitor that dies between an alert's record and the router keeping it leaves it to another, which notifies it once the lease ran out, once (a retry with its dedup key meanwhile only updates it)", async () => {
        const { clock, hub } = replicas({ claimLeaseMs: 3_000 });
        const handed: AlertRecord[] = [];
        const dying = hub({
          dispatch: async () => undefined,
          // The router never keeps it (the process is killed before the outbox row): SendAlert never answers.
          accept: (record) => {
            handed.push(record);
            return new Promise(() => undefined);
          },
          shutdown: async () => undefined,
        });
        const survivorRouter = new RecordingRouter();
        const survivor = hub(survivorRouter);
        const key = `disk-${tag()}`;
        const raise = (h: AlertHub) =>
          h.raise({ kind: 'generic', title: 'disk full 💾 ディスク', severity: 'critical', dedupKey: key });
        void raise(dying);
        for (let i = 0; i < 200 && handed.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
        expect(handed).toHaveLength(1);
        // The caller, unanswered, retries: the open alert is updated, nobody is notified anew.
        const retried = await raise(survivor);
        expect(retried.id).toBe(handed[0]!.id);
        expect((await survivor.lifecycle.get(retried.id)).entry.count).toBe(2);
        await survivor.lifecycle.tick(); // the dying one's claim still runs: nothing
        await survivor.settled();
        expect(survivorRouter.records).toHaveLength(0);
        expect((await survivor.lifecycle.get(retried.id)).entry.notified).toBe(false);
        await new Promise((r) => setTimeout(r, 3_200)); // the lease, on the database's clock
        clock.advance(3_000);
        await survivor.lifecycle.tick();
        await survivor.settled();
        expect(survivorRouter.records.map((r) => [r.id, r.title])).toEqual([
          [retried.id, 'disk full 💾 ディスク'],
        ]);
        const { entry, timeline } = await survivor.lifecycle.get(retried.id);
        expect(entry.notified).toBe(true);
        expect(timeline.map((t) => t.kind)).toEqual(['triggered', 'updated', 'notified']);
        for (let i = 0; i < 3; i++) {
          clock.advance(60_000);
          await survivor.lifecycle.tick();
        }
        await survivor.settled();
        expect(survivorRouter.records).toHaveLength(1);
      });

      it('repeats an unchanged group after repeat_interval', async () => {
        const { lc, trigger, router, hub, clock } = make({ grouping });
        const cluster = `c-${tag()}`;
        await trigger('a', { context: { cluster } });
        clock.advance(30_000);
        await lc.tick();
        clock.advance(4 * 60 * MIN);
        await lc.tick();
        await hub.settled();
        expect(router.records).toHaveLength(2);
      });
    });

    describe('notification log', () => {
      it('one claim per key wins; a claim whose lease ran out is taken over; a sent one never again', async () => {
        const clock = new ManualClock();
        const store = backend.store(clock);
        const key = { groupKey: `g-${tag()}`, receiver: 'channels', step: 's1' };
        expect(await store.claimNotification(key, 'a', 60_000)).toBe(true);
        expect(await store.claimNotification(key, 'b', 60_000)).toBe(false);
        const key2 = { ...key, step: 's2' };
        expect(await store.claimNotification(key2, 'a', 1)).toBe(true);
        await new Promise((r) => setTimeout(r, 20));
        clock.advance(10);
        expect(await store.claimNotification(key2, 'b', 60_000)).toBe(true);
        await store.completeNotification(key2, 'b');
        clock.advance(120_000);
        expect(await store.claimNotification(key2, 'c', 60_000)).toBe(false);
      });
    });
  });
}
