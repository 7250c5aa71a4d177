/**
 * The escalation rules over one pair of stores (memory, PostgreSQL): every rule with a fake clock,
 * a fake notification service that dedups by idempotency key as the real one does.
 */
import { AlertLifecycle } from '../../../services/monitor/alerts/lifecycle';
import type { AlertStore } from '../../../services/monitor/alerts/store';
import { AckLinks } from '../../../services/monitor/oncall/ack-links';
import {
  EscalationPolicySchema,
  type EscalationPolicyConfig,
} from '../../../services/monitor/oncall/escalation-config';
import { EscalationAcknowledger, EscalationEngine } from '../../../services/monitor/oncall/escalation';
import type { EscalationStore } from '../../../services/monitor/oncall/escalation-store';
import {
  PagerError,
  type Pager,
  type PageRequest,
  type PageResult,
} from '../../../services/monitor/oncall/pager';
import type { OnCallLookup } from '../../../services/monitor/oncall/ports';
import { newId } from '../../../shared/runtime/ids';
import { ManualClock } from '../../support/manual-clock';

export const KEY = 'k'.repeat(40);
export const MIN = 60_000;

/** Pages as the notification service keeps them: one notification per idempotency key. */
export class FakePager implements Pager {
  readonly sent: PageRequest[] = [];
  readonly calls: PageRequest[] = [];
  readonly phones = new Map<string, string[]>([
    ['alice', ['+34600111222']],
    ['bob', ['+34600333444']],
    ['carol', ['+34600555666']],
  ]);
  failNext: PagerError | undefined;
  async userPhones(userId: string): Promise<string[]> {
    const p = this.phones.get(userId);
    if (!p) throw new PagerError('unknown user', 'not_found', false);
    return p;
  }
  async page(request: PageRequest): Promise<PageResult> {
    this.calls.push(request);
    if (this.failNext) {
      const err = this.failNext;
      this.failNext = undefined;
      throw err;
    }
    const first = this.sent.find((s) => s.idempotencyKey === request.idempotencyKey);
    // As Notify: the same key with another request is ALREADY_EXISTS.
    if (first && JSON.stringify(first) !== JSON.stringify(request))
      throw new PagerError('idempotency key reused', 'already_exists', false);
    const created = first === undefined;
    if (created) this.sent.push(request);
    return { notificationId: request.idempotencyKey, channels: ['inbox', 'email', 'sms'], created };
  }
  to(user: string): PageRequest[] {
    return this.sent.filter((s) => s.userId === user);
  }
}

/** One schedule, `primary`, with whoever `onCall` says. */
export class FakeOnCall implements OnCallLookup {
  who: string | null = 'carol';
  current(schedule: string, at: Date) {
    if (schedule !== 'primary') throw new Error('unknown schedule');
    return this.who ? { schedule, userId: this.who, start: at, end: at, override: false } : null;
  }
  next() {
    return null;
  }
  names() {
    return ['primary'];
  }
}

export function policy(input: Record<string, unknown>): EscalationPolicyConfig {
  return EscalationPolicySchema.parse(input);
}

export const TWO_STEPS = policy({
  name: 'db',
  match: ['severity=~"critical|high"'],
  steps: [
    { targets: [{ user: 'alice' }], wait_minutes: 5 },
    { targets: [{ user: 'bob' }, { schedule: 'primary' }], wait_minutes: 10 },
  ],
  repeat: 1,
});

export interface Stores {
  alerts: AlertStore;
  store: EscalationStore;
}

/** One replica: its lifecycle, engine and acknowledger over the shared stores. */
export function replica(
  stores: Stores,
  opts: {
    clock: ManualClock;
    pager?: FakePager;
    /** Pages through this instead (the real notification service); `pager` is then unused. */
    wire?: Pager;
    policies?: EscalationPolicyConfig[];
    owner?: string;
    leaseMs?: number;
    onCall?: FakeOnCall;
    drawCode?: () => string;
  },
) {
  const pager = opts.pager ?? new FakePager();
  const lifecycle = new AlertLifecycle({
    store: stores.alerts,
    deliver: () => undefined,
    clock: opts.clock,
    owner: opts.owner,
  });
  const links = new AckLinks({
    signingKey: KEY,
    publicBaseUrl: 'https://mon.example.com/',
    clock: opts.clock,
  });
  const engine = new EscalationEngine({
    alerts: stores.alerts,
    store: stores.store,
    policies: opts.policies ?? [TWO_STEPS],
    pager: opts.wire ?? pager,
    links,
    onCall: opts.onCall ?? new FakeOnCall(),
    category: 'oncall-page',
    linkTtlMs: 60 * MIN,
    codeTtlMs: 30 * MIN,
    claimLeaseMs: opts.leaseMs ?? 60_000,
    maxActive: 100,
    owner: opts.owner,
    clock: opts.clock,
    ...(opts.drawCode ? { drawCode: opts.drawCode } : {}),
  });
  const acks = new EscalationAcknowledger({
    alerts: stores.alerts,
    lifecycle,
    store: stores.store,
    links,
    clock: opts.clock,
  });
  const raise = async (title: string, severity = 'critical', context: Record<string, string> = {}) => {
    const id = newId();
    const r = await lifecycle.trigger(
      {
        id,
        alertName: title,
        kind: 'generic',
        title,
        message: `${title} is down`,
        severity,
        context,
        sourceService: 'db',
        firedAt: opts.clock.now(),
      },
      id,
    );
    return r.entry.alert.id;
  };
  return { pager, lifecycle, engine, acks, links, raise };
}

/** Runs the contract: `make` gives fresh stores per test. */
export function describeEscalationContract(name: string, make: () => Promise<Stores>): void {
  describe(`escalation (${name})`, () => {
    let stores: Stores;
    let clock: ManualClock;
    beforeEach(async () => {
      stores = await make();
      clock = new ManualClock();
    });

    it('a matching triggered alert pages step 1 at once, and only once however often the engine ticks', async () => {
      const r = replica(stores, { clock });
      const id = await r.raise('db down');
      await r.engine.tick();
      await r.engine.tick();
      expect(r.pager.sent.map((p) => p.userId)).toEqual(['alice']);
      const page = r.pager.sent[0]!;
      expect(page.category).toBe('oncall-page');
      expect(page.data.alert_id).toBe(id);
      expect(page.data.ack_sms).toBe(`Reply ACK ${page.data.ack_code}`);
      expect(page.data.ack_url).toMatch(/^https:\/\/mon\.example\.com\/oncall\/ack\?t=/);
      const state = (await r.engine.states([id]))[0]!;
      expect(state).toMatchObject({ step: 0, round: 0, status: 'active', targets: ['alice'] });
      expect(state.pages).toHaveLength(1);
      const { timeline } = await r.lifecycle.get(id);
      expect(timeline.filter((t) => t.kind === 'notified' && t.actor !== 'channels')).toEqual([
        expect.objectContaining({ actor: 'alice', detail: 'paged (db step 1) via inbox, email, sms' }),
      ]);
    });

    it("after wait_minutes unacknowledged the next step pages its users and the schedule's on-call person; not a minute before", async () => {
      const r = replica(stores, { clock });
      await r.raise('db down');
      await r.engine.tick();
      clock.advance(5 * MIN - 1);
      await r.engine.tick();
      expect(r.pager.sent).toHaveLength(1);
      clock.advance(1);
      await r.engine.tick();
      expect(r.pager.sent.map((p) => p.userId)).toEqual(['alice', 'bob', 'carol']);
      expect(r.pager.sent[1]!.data.step).toBe('2');
    });

    it('a muted step waits: after a silence longer than wait_minutes ends, the next step pages only wait_minutes later', async () => {
      const r = replica(stores, { clock });
      await r.raise('db down');
      await r.engine.tick();
      const silence = await r.lifecycle.createSilence({
        matchers: [{ name: 'alertname', op: '=', value: 'db down' }],
        startsAt: 0,
        endsAt: clock.now() + 120 * MIN,
        createdBy: 'ann',
        comment: 'maintenance 🛠 صيانة',
      });
      clock.advance(60 * MIN);
      await r.engine.tick();
      expect(r.pager.sent.map((p) => p.userId)).toEqual(['alice']);
      await r.lifecycle.expireSilence(silence.id);
      await r.engine.tick();
      clock.advance(5 * MIN - 1);
      await r.engine.tick();
      expect(r.pager.sent.map((p) => p.userId)).toEqual(['alice']);
      clock.advance(1);
      await r.engine.tick();
      expect(r.pager.sent.map((p) => p.userId)).toEqual(['alice', 'bob', 'carol']);
    });

    it('after the last step the list runs again `repeat` times, then stops (exhausted)', async () => {
      const r = replica(stores, { clock });
      const id = await r.raise('db down');
      for (let i = 0; i < 10; i++) {
        await r.engine.tick();
        clock.advance(5 * MIN);
      }
      expect(r.pager.sent.map((p) => `${p.userId}:${p.data.round}`)).toEqual([
        'alice:1',
        'bob:1',
        'carol:1',
        'alice:2',
        'bob:2',
        'carol:2',
      ]);
      expect((await stores.store.get(id))!.status).toBe('exhausted');
    });

    it('an acknowledged alert stops escalating; a resolved one too', async () => {
      const r = replica(stores, { clock });
      const a = await r.raise('db down');
      const b = await r.raise('cache down');
      await r.engine.tick();
      await r.lifecycle.acknowledge(a, 'someone');
      await r.lifecycle.resolve(b, 'someone');
      clock.advance(5 * MIN);
      await r.engine.tick();
      expect(r.pager.sent.map((p) => p.userId)).toEqual(['alice', 'alice']);
      expect(await stores.store.get(a)).toMatchObject({ status: 'stopped', reason: 'acknowledged' });
      expect(await stores.store.get(b)).toMatchObject({ status: 'stopped', reason: 'resolved' });
    });

    it('no policy matches: no escalation; the first matching policy wins', async () => {
      const low = policy({
        name: 'low',
        match: ['severity="low"'],
        steps: [{ targets: [{ user: 'bob' }], wait_minutes: 1 }],
      });
      const any = policy({ name: 'any', steps: [{ targets: [{ user: 'carol' }], wait_minutes: 1 }] });
      const r = replica(stores, { clock, policies: [TWO_STEPS, low] });
      const info = await r.raise('disk 70%', 'info');
      await r.engine.tick();
      expect(r.pager.sent).toHaveLength(0);
      expect(await stores.store.get(info)).toBeUndefined();
      const r2 = replica(stores, { clock, policies: [low, any, TWO_STEPS], pager: r.pager });
      const crit = await r2.raise('db down');
      await r2.engine.tick();
      expect((await stores.store.get(crit))!.policy).toBe('any');
    });

    it('an unknown user is recorded as a failed page once and the escalation goes on', async () => {
      const p = policy({
        name: 'x',
        steps: [{ targets: [{ user: 'nobody' }, { user: 'alice' }], wait_minutes: 1 }],
      });
      const r = replica(stores, { clock, policies: [p] });
      const id = await r.raise('db down');
      await r.engine.tick();
      await r.engine.tick();
      expect(r.pager.sent.map((s) => s.userId)).toEqual(['alice']);
      const { timeline } = await r.lifecycle.get(id);
      expect(timeline.filter((t) => t.detail.startsWith('page failed'))).toHaveLength(1);
    });

    it('a page the notification service could not take now is retried at the next tick, with the same key', async () => {
      const r = replica(stores, { clock });
      await r.raise('db down');
      r.pager.failNext = new PagerError('down', 'unavailable', true);
      await r.engine.tick();
      expect(r.pager.sent).toHaveLength(0);
      await r.engine.tick();
      expect(r.pager.sent).toHaveLength(1);
      expect(r.pager.calls[0]!.idempotencyKey).toBe(r.pager.calls[1]!.idempotencyKey);
    });

    it('two engines on the same stores page each step once', async () => {
      const pager = new FakePager();
      const r1 = replica(stores, { clock, pager, owner: 'm1' });
      const r2 = replica(stores, { clock, pager, owner: 'm2' });
      await r1.raise('db down');
      for (let i = 0; i < 6; i++) {
        await Promise.all([r1.engine.tick(), r2.engine.tick()]);
        clock.advance(5 * MIN);
      }
      expect(pager.calls.map((p) => p.userId).sort()).toEqual([
        'alice',
        'alice',
        'bob',
        'bob',
        'carol',
        'carol',
      ]);
    });

    describe('SMS codes', () => {
      async function paged() {
        const r = replica(stores, { clock });
        const id = await r.raise('db down');
        await r.engine.tick();
        return { r, id, code: r.pager.sent[0]!.data.ack_code! };
      }

      it('the code from the paged number acknowledges, recorded with who and the masked number; a replay answers already_acknowledged', async () => {
        const { r, id, code } = await paged();
        expect(code).toMatch(/^\d{6}$/);
        expect(await r.acks.acknowledgeByCode(code, '+34600111222')).toBe('acknowledged');
        const { entry, timeline } = await r.lifecycle.get(id);
        expect(entry.acknowledgedBy).toBe('alice');
        expect(timeline.at(-1)).toMatchObject({
          kind: 'acknowledged',
          actor: 'alice',
          detail: 'sms from +3460****222',
        });
        expect(await r.acks.acknowledgeByCode(code, '+34600111222')).toBe('already_acknowledged');
      });

      it('from another number, unknown, malformed or expired: refused and nothing changes', async () => {
        const { r, id, code } = await paged();
        expect(await r.acks.acknowledgeByCode(code, '+34600333444')).toBe('refused');
        expect(await r.acks.acknowledgeByCode(code === '000000' ? '000001' : '000000', '+34600111222')).toBe(
          'refused',
        );
        expect(await r.acks.acknowledgeByCode('12ab', '+34600111222')).toBe('refused');
        clock.advance(30 * MIN);
        expect(await r.acks.acknowledgeByCode(code, '+34600111222')).toBe('refused');
        expect((await r.lifecycle.get(id)).entry.state).toBe('triggered');
      });

      it('a code of another alert from a number paged only for this one is refused', async () => {
        const p = policy({
          name: 'p',
          match: ['alertname="a"'],
          steps: [{ targets: [{ user: 'alice' }], wait_minutes: 1 }],
        });
        const q = policy({
          name: 'q',
          match: ['alertname="b"'],
          steps: [{ targets: [{ user: 'bob' }], wait_minutes: 1 }],
        });
        const r = replica(stores, { clock, policies: [p, q] });
        const b = await r.raise('b');
        await r.raise('a');
        await r.engine.tick();
        const bobCode = r.pager.to('bob')[0]!.data.ack_code!;
        expect(await r.acks.acknowledgeByCode(bobCode, '+34600111222')).toBe('refused');
        expect((await r.lifecycle.get(b)).entry.state).toBe('triggered');
      });

      it('live codes are unique: a drawn code held by a live page is drawn again', async () => {
        const draws = ['111111', '111111', '222222'];
        const p = policy({
          name: 'p',
          steps: [{ targets: [{ user: 'alice' }, { user: 'bob' }], wait_minutes: 1 }],
        });
        const r = replica(stores, { clock, policies: [p], drawCode: () => draws.shift() ?? '333333' });
        await r.raise('db down');
        await r.engine.tick();
        expect(r.pager.sent.map((s) => s.data.ack_code)).toEqual(['111111', '222222']);
      });
    });

    describe('links', () => {
      it('GET-style check never acknowledges; the POST does, once; a replay answers already_acknowledged', async () => {
        const r = replica(stores, { clock });
        const id = await r.raise('db down');
        await r.engine.tick();
        const token = new URL(r.pager.sent[0]!.data.ack_url!).searchParams.get('t')!;
        expect(await r.acks.checkLink(token)).toMatchObject({
          outcome: 'acknowledged',
          alertId: id,
          userId: 'alice',
        });
        expect((await r.lifecycle.get(id)).entry.state).toBe('triggered');
        expect((await r.acks.acknowledgeByLink(token)).outcome).toBe('acknowledged');
        const { entry, timeline } = await r.lifecycle.get(id);
        expect(entry.acknowledgedBy).toBe('alice');
        expect(timeline.at(-1)).toMatchObject({ kind: 'acknowledged', actor: 'alice', detail: 'link' });
        expect((await r.acks.acknowledgeByLink(token)).outcome).toBe('already_acknowledged');
      });

      it('expired, forged, or re-pointed at another alert: refused and nothing changes', async () => {
        const r = replica(stores, { clock });
        const a = await r.raise('db down');
        const b = await r.raise('cache down');
        await r.engine.tick();
        const token = new URL(r.pager.sent[0]!.data.ack_url!).searchParams.get('t')!;
        const [payload, mac] = token.split('.');
        const other = JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8')) as [
          string,
          string,
          number,
        ];
        other[0] = other[0] === a ? b : a;
        const moved = `${Buffer.from(JSON.stringify(other)).toString('base64url')}.${mac}`;
        expect(await r.acks.acknowledgeByLink(moved)).toEqual({ outcome: 'refused', reason: 'forged' });
        const otherKey = new AckLinks({ signingKey: 'x'.repeat(40), publicBaseUrl: 'https://x', clock });
        expect(await r.acks.acknowledgeByLink(otherKey.token(a, 'alice', clock.now() + MIN))).toEqual({
          outcome: 'refused',
          reason: 'forged',
        });
        expect(await r.acks.acknowledgeByLink('garbage')).toEqual({
          outcome: 'refused',
          reason: 'malformed',
        });
        clock.advance(60 * MIN);
        expect(await r.acks.acknowledgeByLink(token)).toEqual({ outcome: 'refused', reason: 'expired' });
        expect((await r.lifecycle.get(a)).entry.state).toBe('triggered');
        expect((await r.lifecycle.get(b)).entry.state).toBe('triggered');
      });
    });
  });
}
