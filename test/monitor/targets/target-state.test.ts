import { FAILURES_BEFORE_DOWN, TargetTracker } from '../../../services/monitor/targets/target-state';
import type { ProbeOutcome } from '../../../services/monitor/targets/probes';
import { toTargetJson } from '../../../services/monitor/web/status-json';

const OK: ProbeOutcome = { ok: true };
const FAIL: ProbeOutcome = { ok: false, reason: 'NOT_SERVING' };

function tracker(): TargetTracker {
  return new TargetTracker({ name: 'api', grpcAddress: '127.0.0.1:1', httpUrl: null });
}

function run(t: TargetTracker, outcomes: ProbeOutcome[]): Array<string | null> {
  return outcomes.map((o, i) => t.record(o, new Date(1_000 * (i + 1)), 2));
}

describe('TargetTracker', () => {
  it('is unknown before the first probe', () => {
    const s = tracker().snapshot();
    expect(s).toMatchObject({ up: null, lastProbeAt: null, lastLatencyMs: null, consecutiveFailures: 0 });
  });

  it('is up after one successful probe, and a first success is not a recovery', () => {
    const t = tracker();
    expect(run(t, [OK])).toEqual([null]);
    expect(t.snapshot()).toMatchObject({ up: true, consecutiveFailures: 0, lastLatencyMs: 2 });
    expect(t.snapshot().lastProbeAt).toEqual(new Date(1000));
  });

  it('goes down after two failed probes in a row, once, and stays down without more transitions', () => {
    const t = tracker();
    expect(FAILURES_BEFORE_DOWN).toBe(2);
    expect(run(t, [OK, FAIL, FAIL, FAIL, FAIL])).toEqual([null, null, 'down', null, null]);
    expect(t.snapshot()).toMatchObject({ up: false, consecutiveFailures: 4, lastError: 'NOT_SERVING' });
  });

  it('stays up through one failure followed by a success (flapping within one failure)', () => {
    const t = tracker();
    const transitions = run(t, [OK, FAIL, OK, FAIL, OK, FAIL, OK]);
    expect(transitions.every((x) => x === null)).toBe(true);
    expect(t.snapshot()).toMatchObject({ up: true, consecutiveFailures: 0 });
  });

  it('stays up (not down) after one failure', () => {
    const t = tracker();
    run(t, [OK, FAIL]);
    expect(t.snapshot()).toMatchObject({ up: true, consecutiveFailures: 1, lastError: 'NOT_SERVING' });
  });

  it('recovers once on the first success after being down', () => {
    const t = tracker();
    expect(run(t, [OK, FAIL, FAIL, OK, OK])).toEqual([null, null, 'down', 'recovered', null]);
    expect(t.snapshot()).toMatchObject({ up: true, consecutiveFailures: 0 });
  });

  it('reports a target that is down from the start: unknown after one failure, down after two', () => {
    const t = tracker();
    expect(t.record(FAIL, new Date(), 1)).toBeNull();
    expect(t.snapshot().up).toBeNull();
    expect(t.record(FAIL, new Date(), 1)).toBe('down');
    expect(t.snapshot().up).toBe(false);
  });

  it('hands out copies: changing a snapshot does not change the state', () => {
    const t = tracker();
    run(t, [OK]);
    const s = t.snapshot();
    s.up = false;
    s.lastProbeAt!.setTime(0);
    expect(t.snapshot()).toMatchObject({ up: true, lastProbeAt: new Date(1000) });
  });

  it('records when up last changed: at the first known state, at down and at recovery, not on repeats', () => {
    const t = tracker();
    run(t, [OK, OK]);
    expect(t.snapshot().lastChangeAt).toEqual(new Date(1_000));
    run(t, [OK, FAIL, FAIL, FAIL]);
    // The probes of run() are at 1 s, 2 s, ...: the second failure (at 3 s) made it down.
    expect(t.snapshot()).toMatchObject({ up: false, lastChangeAt: new Date(3_000) });
  });

  it('restore takes a kept state in place of its own and goes on from it (failures in a row, no second "down")', () => {
    const t = tracker();
    const kept = {
      up: false,
      lastProbeAt: new Date(5_000),
      lastLatencyMs: 7,
      consecutiveFailures: 4,
      lastError: 'HTTP 503',
      lastChangeAt: new Date(2_000),
    };
    expect(t.restore(kept)).toBe(true);
    expect(t.restore(kept)).toBe(false);
    expect(t.snapshot()).toMatchObject({ name: 'api', grpcAddress: '127.0.0.1:1', ...kept });
    expect(t.record(FAIL, new Date(6_000), 1)).toBeNull();
    expect(t.snapshot()).toMatchObject({ consecutiveFailures: 5, lastChangeAt: new Date(2_000) });
    expect(t.record(OK, new Date(7_000), 1)).toBe('recovered');
  });
});

describe('the last error once the target is up again (issue 29)', () => {
  it('keeps the error with its time, and the JSON marks it recovered only while up with no failure', () => {
    const t = new TargetTracker({ name: 'search 🔍', grpcAddress: null, httpUrl: null });
    t.record({ ok: false, reason: 'UNAVAILABLE' }, new Date(1_000), 1);
    // One failure, not down yet: the error is current.
    expect(toTargetJson(t.snapshot())).toMatchObject({
      state: 'unknown',
      last_error: 'UNAVAILABLE',
      last_error_at: new Date(1_000).toISOString(),
      last_error_recovered: false,
    });
    t.record({ ok: true }, new Date(61_000), 1);
    expect(toTargetJson(t.snapshot())).toMatchObject({
      state: 'up',
      consecutive_failures: 0,
      last_error: 'UNAVAILABLE',
      last_error_at: new Date(1_000).toISOString(),
      last_error_recovered: true,
    });
    // A new failure while up: current again, with its own time.
    t.record({ ok: false, reason: 'HTTP 503' }, new Date(121_000), 1);
    expect(toTargetJson(t.snapshot())).toMatchObject({
      state: 'up',
      last_error: 'HTTP 503',
      last_error_at: new Date(121_000).toISOString(),
      last_error_recovered: false,
    });
  });
});
