/**
 * toEscalationJson (issue 28, O2b): the status page's view of one escalation, on fixed instants:
 * 1-based positions, the next step and when it is due (within a round, into the next round, none at
 * the end, none once stopped), a removed policy, the untrusted texts cut on code points, the target
 * list at and past its bound, and acknowledged-by only with its "how".
 */
import {
  MAX_CONTEXT_ENTRIES,
  MAX_TITLE_CHARS,
  toEscalationJson,
  type EscalationViewInput,
} from '../../../services/monitor/web/status-json';
import { openEscalations, PAGE_ESCALATIONS } from '../../../services/monitor/web/escalation-routes';

const T0 = Date.UTC(2026, 10, 28, 12, 0, 0);
const POLICY = { steps: [{ wait_minutes: 5 }, { wait_minutes: 10 }], repeat: 1 };

function input(over: Partial<EscalationViewInput['state']> = {}, rest: Partial<EscalationViewInput> = {}) {
  return {
    alert: { id: 'a1', alertName: 'generic', title: 'db down', severity: 'critical' },
    alertState: 'triggered',
    acknowledgedBy: '',
    acknowledgedHow: '',
    state: {
      policy: 'db',
      status: 'active',
      reason: '',
      round: 0,
      step: 0,
      stepStartedAt: T0,
      targets: ['alice'],
      pages: [{ userId: 'alice', round: 0, step: 0, at: T0, channels: ['email', 'sms'] }],
      ...over,
    },
    policy: POLICY,
    ...rest,
  } satisfies EscalationViewInput;
}

describe('toEscalationJson', () => {
  it('shows 1-based positions and the next step due after the current step`s wait', () => {
    expect(toEscalationJson(input())).toMatchObject({
      round: 1,
      step: 1,
      steps: 2,
      rounds: 2,
      step_started_at: '2026-11-28T12:00:00.000Z',
      next_step_at: '2026-11-28T12:05:00.000Z',
      next: { round: 1, step: 2 },
      pages: [
        {
          user_id: 'alice',
          round: 1,
          step: 1,
          at: '2026-11-28T12:00:00.000Z',
          channels: ['email', 'sms'],
          error: null,
        },
      ],
      acknowledged_by: null,
      acknowledged_how: null,
    });
  });

  it('the last step of a round is followed by the next round; the last of the last round by nothing', () => {
    expect(toEscalationJson(input({ step: 1 }))).toMatchObject({
      next: { round: 2, step: 1 },
      next_step_at: '2026-11-28T12:10:00.000Z',
    });
    expect(toEscalationJson(input({ round: 1, step: 1 }))).toMatchObject({
      round: 2,
      step: 2,
      next: null,
      next_step_at: '2026-11-28T12:10:00.000Z', // the end (exhausted) is due then
    });
  });

  it('a stopped escalation has no next step; a removed policy has no counts and no next', () => {
    expect(toEscalationJson(input({ status: 'stopped', reason: 'acknowledged' }))).toMatchObject({
      status: 'stopped',
      reason: 'acknowledged',
      next: null,
      next_step_at: null,
    });
    const gone = input();
    delete (gone as Partial<EscalationViewInput>).policy;
    expect(toEscalationJson(gone)).toMatchObject({ steps: 0, rounds: 0, next: null, next_step_at: null });
  });

  it('a failed page carries its error code', () => {
    const j = toEscalationJson(
      input({ pages: [{ userId: 'zed', round: 0, step: 0, at: T0, channels: [], error: 'not_found' }] }),
    );
    expect(j.pages).toEqual([
      { user_id: 'zed', round: 1, step: 1, at: '2026-11-28T12:00:00.000Z', channels: [], error: 'not_found' },
    ]);
  });

  it('cuts the title on code points (emoji, CJK, RTL kept whole) at and past the bound', () => {
    const unit = '🔥数ق'; // 3 code points, 4 UTF-16 units
    const at = unit.repeat(MAX_TITLE_CHARS / 3);
    expect([...at]).toHaveLength(MAX_TITLE_CHARS);
    const title = (t: string) =>
      toEscalationJson(input({}, { alert: { id: 'a1', alertName: 'g', title: t, severity: 'critical' } }))
        .title;
    expect(title(at)).toBe(at);
    const past = title(at + '🔥');
    expect([...past]).toHaveLength(MAX_TITLE_CHARS);
    expect(past.endsWith('…')).toBe(true);
    expect(past).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/); // no lone high surrogate
  });

  it('lists the current targets up to the bound', () => {
    const users = (n: number) => Array.from({ length: n }, (_, i) => `u${i}`);
    expect(toEscalationJson(input({ targets: users(MAX_CONTEXT_ENTRIES) })).targets).toHaveLength(
      MAX_CONTEXT_ENTRIES,
    );
    expect(toEscalationJson(input({ targets: users(MAX_CONTEXT_ENTRIES + 1) })).targets).toEqual(
      users(MAX_CONTEXT_ENTRIES),
    );
  });

  it('acknowledged by whom and how only when acknowledged', () => {
    expect(
      toEscalationJson(
        input({}, { acknowledgedBy: 'أمينة', acknowledgedHow: 'link', alertState: 'acknowledged' }),
      ),
    ).toMatchObject({ alert_state: 'acknowledged', acknowledged_by: 'أمينة', acknowledged_how: 'link' });
    expect(
      toEscalationJson(input({}, { acknowledgedBy: '', acknowledgedHow: 'stale' })).acknowledged_how,
    ).toBeNull();
  });
});

describe('openEscalations', () => {
  function entry(id: string, acknowledgedBy = '') {
    return {
      alert: { id, alertName: 'generic', title: `t ${id}`, severity: 'critical' },
      state: acknowledgedBy ? 'acknowledged' : 'triggered',
      acknowledgedBy,
    };
  }
  function state(alertId: string) {
    return { ...input().state, alertId, targets: ['alice'], pages: [], startedAt: T0, updatedAt: T0 };
  }

  it('looks at the newest PAGE_ESCALATIONS open alerts, lists those with an escalation, how each was acknowledged', async () => {
    const calls: Array<{ filter: unknown; limit: number }> = [];
    const open = Array.from({ length: PAGE_ESCALATIONS + 1 }, (_, i) => entry(`a${i}`, i === 1 ? 'bob' : ''));
    const lifecycle = {
      list: async (filter: unknown, _after: unknown, limit: number) => {
        calls.push({ filter, limit });
        return open.slice(0, limit);
      },
      get: async (id: string) => ({
        entry: open.find((e) => e.alert.id === id),
        timeline: [
          { at: T0, kind: 'acknowledged', actor: 'x', detail: 'link' },
          { at: T0 + 1, kind: 'notified', actor: 'bob', detail: 'paged' },
          { at: T0 + 2, kind: 'acknowledged', actor: 'bob', detail: 'sms from +3460****222' },
        ],
      }),
    };
    const asked: string[][] = [];
    const list = await openEscalations({
      lifecycle: lifecycle as never,
      policies: [],
      states: async (ids) => {
        asked.push([...ids]);
        return ids.filter((id) => id !== 'a2').map((id) => state(id)) as never;
      },
    });
    expect(calls).toEqual([{ filter: { states: ['triggered', 'acknowledged'] }, limit: PAGE_ESCALATIONS }]);
    expect(asked).toEqual([open.slice(0, PAGE_ESCALATIONS).map((e) => e.alert.id)]);
    expect(list).toHaveLength(PAGE_ESCALATIONS - 1); // a2 has none
    expect(list.map((e) => e.alert_id)).not.toContain('a2');
    expect(list[1]).toMatchObject({
      alert_id: 'a1',
      alert_state: 'acknowledged',
      acknowledged_by: 'bob',
      acknowledged_how: 'sms from +3460****222',
      steps: 0, // policy no longer configured
    });
  });
});
