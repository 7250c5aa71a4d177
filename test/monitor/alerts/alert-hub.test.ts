/**
 * AlertHub in-process: identity and kinds of alerts, the bounds (ring, watcher buffer, watcher cap,
 * listener cap) tested at the bound, the severity filter, bad input, listener clean-up after 10,000
 * watches, and a clean stop (watchers told UNAVAILABLE, the dispatcher flushed).
 */
import { getEventListeners } from 'node:events';
import type { Alert } from '../../../services/monitor/alerts/alert';
import { InvalidArgumentError, ResourceExhaustedError, UnavailableError } from '../../../shared/errors';
import type { AlertRecord } from '../../../shared/monitoring/alerts/channels';
import { SLO, SLOMonitor } from '../../../shared/monitoring';
import {
  ALERT_LIMITS,
  AlertHub,
  type AlertFrame,
  type AlertRouter,
  alertOf,
} from '../../../services/monitor/alerts/alert-hub';

class RecordingRouter implements AlertRouter {
  readonly records: AlertRecord[] = [];
  shutdowns = 0;
  async dispatch(record: AlertRecord): Promise<void> {
    this.records.push(record);
  }
  async shutdown(): Promise<void> {
    this.shutdowns++;
  }
}

function hub(overrides: Partial<ConstructorParameters<typeof AlertHub>[0]> = {}) {
  const router = new RecordingRouter();
  const h = new AlertHub({
    router,
    recentSize: 5,
    maxWatchers: 3,
    watchBufferSize: 4,
    defaultSource: 'monitor',
    clock: { now: () => Date.UTC(2026, 10, 23, 12, 0), monotonic: () => 0 },
    ...overrides,
  });
  return { hub: h, router };
}

const raise = (h: AlertHub, title: string, severity = 'high') =>
  h.raise({ kind: 'generic', title, message: `${title} message`, severity });

describe('AlertHub.raise', () => {
  it('gives each alert a UUID, its kind, string context, the source service and the time it fired', async () => {
    const { hub: h, router } = hub();
    const alert = await h.raise({
      kind: 'generic',
      title: 'disk full',
      message: '/var at 99%',
      severity: 'critical',
      context: { host: 'db-1', used: 0.99, tier: 'P0_PAGE', detail: { mount: '/var' }, gone: null },
      sourceService: 'billing',
    });
    expect(alert.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(alert).toMatchObject({
      alertName: 'disk full',
      kind: 'generic',
      severity: 'critical',
      sourceService: 'billing',
      context: { host: 'db-1', used: '0.99', tier: 'P0_PAGE', detail: '{"mount":"/var"}' },
    });
    expect(alert.firedAt).toBe(Date.UTC(2026, 10, 23, 12, 0));
    // The router gets the same identity, and channels find the same Alert from the record.
    expect(router.records).toHaveLength(1);
    expect(router.records[0]).toMatchObject({ id: alert.id, tier: 'P0_PAGE', sourceService: 'billing' });
    expect(alertOf(router.records[0]!)).toBe(alert);
  });

  it('uses the monitor as source when none is given, and two alerts never share an id', async () => {
    const { hub: h } = hub();
    const [a, b] = [await raise(h, 'a'), await raise(h, 'a')];
    expect(a.sourceService).toBe('monitor');
    expect(a.id).not.toBe(b.id);
  });

  it("is the SLO monitor's dispatcher: an alert with an `slo` context is kind SLO, named after the SLO", async () => {
    const { hub: h } = hub();
    const slo = new SLOMonitor({ alertDispatcher: h });
    slo.register(
      new SLO({
        name: 'checkout-p99',
        metric: 'checkout_ms',
        percentile: 0.99,
        thresholdMs: 100,
        windowSeconds: 60,
      }),
    );
    for (let i = 0; i < 10; i++) slo.recordSample('checkout_ms', 500);
    await slo.evaluateAndDispatch();
    const [alert] = h.recent(1);
    expect(alert).toMatchObject({ kind: 'slo', alertName: 'checkout-p99' });
  });

  it.each([
    [{ title: '' }, 'title is required'],
    [{ title: '   ' }, 'title is required'],
    [{ severity: '' }, 'severity is required'],
    [{ title: 'x'.repeat(ALERT_LIMITS.titleChars + 1) }, 'title is longer than 256'],
    [{ message: 'm'.repeat(ALERT_LIMITS.messageChars + 1) }, 'message is longer than 4096'],
    [{ context: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v'])) }, 'more than 32'],
    [{ context: { k: 'v'.repeat(ALERT_LIMITS.contextValueChars + 1) } }, 'longer than 1024'],
    [{ context: { ['k'.repeat(65)]: 'v' } }, 'context keys'],
  ])(
    'refuses bad input (case %#) with InvalidArgumentError, keeping and sending nothing',
    async (bad, reason) => {
      const { hub: h, router } = hub();
      const p = h.raise({ kind: 'generic', title: 't', severity: 'low', ...bad });
      await expect(p).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(p).rejects.toThrow(reason);
      expect(h.recent()).toEqual([]);
      expect(router.records).toEqual([]);
    },
  );

  it('accepts the largest title, message and context at their bounds', async () => {
    const { hub: h } = hub();
    const context = Object.fromEntries(
      Array.from({ length: ALERT_LIMITS.contextEntries }, (_, i) => [
        `k${i}`,
        'v'.repeat(ALERT_LIMITS.contextValueChars),
      ]),
    );
    const alert = await h.raise({
      kind: 'generic',
      title: 't'.repeat(ALERT_LIMITS.titleChars),
      message: 'm'.repeat(ALERT_LIMITS.messageChars),
      severity: 'low',
      context,
    });
    expect(Object.keys(alert.context)).toHaveLength(ALERT_LIMITS.contextEntries);
  });
});

describe('AlertHub.raiseMetric', () => {
  it.each([
    [200, 100, 'warning'], // exactly 100% over: not more than 100%
    [200.0001, 100, 'critical'],
    [150, 100, 'warning'],
    [1, 0, 'critical'], // no "100 percent" of 0: any value above is critical
  ])('value %d over threshold %d is %s', async (value, threshold, severity) => {
    const { hub: h } = hub();
    const alert = await h.raiseMetric({ metricName: 'queue_depth', currentValue: value, threshold });
    expect(alert).toMatchObject({ severity, kind: 'metric', alertName: 'queue_depth' });
  });

  it.each([
    [{ metricName: '' }, 'metric_name is required'],
    [{ currentValue: Number.NaN }, 'current_value must be a finite number'],
    [{ threshold: Number.POSITIVE_INFINITY }, 'threshold must be a finite number'],
  ])('refuses bad metric input (case %#)', async (bad, reason) => {
    const { hub: h } = hub();
    await expect(h.raiseMetric({ metricName: 'm', currentValue: 1, threshold: 1, ...bad })).rejects.toThrow(
      reason,
    );
  });
});

describe('AlertHub.recent and subscribe', () => {
  it('keeps the newest recentSize alerts, newest first', async () => {
    const { hub: h } = hub({ recentSize: 5 });
    for (let i = 1; i <= 7; i++) await raise(h, `a${i}`);
    expect(h.recent(10).map((a) => a.title)).toEqual(['a7', 'a6', 'a5', 'a4', 'a3']);
    expect(h.recent(2).map((a) => a.title)).toEqual(['a7', 'a6']);
    expect(h.recent(0)).toEqual([]);
  });

  it('an acknowledgement and a resolution are announced again (same id, new state); recent lists it once, as it is now', async () => {
    const { hub: h, router } = hub({ recentSize: 10 });
    const seen: string[] = [];
    h.subscribe((a) => seen.push(`${a.title}:${a.state ?? 'triggered'}`));
    const disk = await raise(h, 'disk full 💾');
    const other = await raise(h, 'قاعدة البيانات بطيئة');
    const sentBefore = router.records.length;
    await h.lifecycle.acknowledge(disk.id, 'ann@example.com');
    expect(h.recent().map((a) => [a.id, a.state])).toEqual([
      [disk.id, 'acknowledged'],
      [other.id, 'triggered'],
    ]);
    // An acknowledgement reaches no channel.
    expect(router.records).toHaveLength(sentBefore);
    await h.lifecycle.resolve(disk.id, 'ann@example.com');
    expect(h.recent().map((a) => [a.id, a.state])).toEqual([
      [disk.id, 'resolved'],
      [other.id, 'triggered'],
    ]);
    expect(seen).toEqual([
      'disk full 💾:triggered',
      'قاعدة البيانات بطيئة:triggered',
      'disk full 💾:acknowledged',
      'disk full 💾:resolved',
    ]);
    // The ring holds four entries for two alerts: a limit of 2 reads the newest two entries (both the
    // disk alert's), listed once.
    expect(h.recent(2).map((a) => a.id)).toEqual([disk.id]);
  });

  it('calls listeners with each alert, caps them, and the returned function removes one', async () => {
    const { hub: h } = hub({ maxListeners: 2 });
    const seen: string[] = [];
    const off1 = h.subscribe((a) => seen.push(`1:${a.title}`));
    h.subscribe((a) => seen.push(`2:${a.title}`));
    expect(() => h.subscribe(() => undefined)).toThrow(ResourceExhaustedError);
    await raise(h, 'x');
    off1();
    off1(); // a second call removes nothing else
    expect(h.listenerCount).toBe(1);
    await raise(h, 'y');
    expect(seen).toEqual(['1:x', '2:x', '2:y']);
    // A freed place can be taken again.
    expect(() => h.subscribe(() => undefined)).not.toThrow();
  });

  it('a listener that throws does not stop the alert or the other listeners', async () => {
    const { hub: h, router } = hub();
    const seen: string[] = [];
    h.subscribe(() => {
      throw new Error('boom');
    });
    h.subscribe((a) => seen.push(a.title));
    await raise(h, 'still here');
    expect(seen).toEqual(['still here']);
    expect(router.records).toHaveLength(1);
  });
});

async function take(it: AsyncIterator<Alert>, n: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await it.next();
    if (r.done) break;
    out.push(r.value.title);
  }
  return out;
}

describe('AlertHub.watch', () => {
  it('delivers alerts raised after it started, filtered by severity in any case', async () => {
    const { hub: h } = hub();
    const it = h.watch({ severities: ['CRITICAL', 'warning'] })[Symbol.asyncIterator]();
    const first = it.next(); // iteration starts: the watcher joins
    await raise(h, 'low one', 'low');
    await raise(h, 'crit', 'Critical');
    await raise(h, 'warn', 'WARNING');
    expect((await first).value?.title).toBe('crit');
    expect(await take(it, 1)).toEqual(['warn']);
    await it.return?.();
    expect(h.watcherCount).toBe(0);
  });

  it('buffers watchBufferSize alerts for a reader that does not read, and closes it at one more', async () => {
    const { hub: h } = hub({ watchBufferSize: 4 });
    const it = h.watch()[Symbol.asyncIterator]();
    const first = it.next();
    await raise(h, 'a0');
    await first; // a0 handed over; the reader now reads nothing
    for (let i = 1; i <= 4; i++) await raise(h, `a${i}`);
    expect(h.watcherCount).toBe(1); // exactly at the bound: still open
    await raise(h, 'a5'); // one more
    expect(h.watcherCount).toBe(0);
    await expect(it.next()).rejects.toBeInstanceOf(ResourceExhaustedError);
  });

  it('a reader that keeps at the bound is never closed', async () => {
    const { hub: h } = hub({ watchBufferSize: 4 });
    const it = h.watch()[Symbol.asyncIterator]();
    const first = it.next();
    await raise(h, 'start');
    await first;
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 4; i++) await raise(h, `r${round}-${i}`);
      expect(await take(it, 4)).toEqual([0, 1, 2, 3].map((i) => `r${round}-${i}`));
    }
    expect(h.watcherCount).toBe(1);
    await it.return?.();
  });

  it('refuses a watch beyond maxWatchers with ResourceExhaustedError; a freed place is taken again', async () => {
    const { hub: h } = hub({ maxWatchers: 2 });
    const [ca, cb] = [new AbortController(), new AbortController()];
    const a = h.watch({ signal: ca.signal })[Symbol.asyncIterator]();
    const b = h.watch({ signal: cb.signal })[Symbol.asyncIterator]();
    const [na, nb] = [a.next(), b.next()];
    await new Promise((r) => setImmediate(r));
    expect(h.watcherCount).toBe(2);
    expect(() => h.watch()).toThrow(ResourceExhaustedError);
    ca.abort();
    expect((await na).done).toBe(true);
    expect(h.watcherCount).toBe(1);
    expect(() => h.watch()).not.toThrow();
    cb.abort();
    await nb;
  });

  it.each([
    [{ severities: Array.from({ length: 17 }, (_, i) => `s${i}`) }, 'more than 16'],
    [{ severities: [''] }, 'severities is required'],
    [{ severities: ['x'.repeat(33)] }, 'longer than 32'],
  ])('refuses a bad filter (case %#) with InvalidArgumentError', (bad, reason) => {
    const { hub: h } = hub();
    expect(() => h.watch(bad)).toThrow(InvalidArgumentError);
    expect(() => h.watch(bad)).toThrow(reason);
  });

  it('after 10,000 watches opened and aborted, no abort listener and no watcher is left', async () => {
    const { hub: h } = hub({ maxWatchers: 10_000 });
    const shutdown = new AbortController();
    for (let i = 0; i < 10_000; i++) {
      const call = new AbortController();
      const it = h.watch({ signal: call.signal })[Symbol.asyncIterator]();
      const next = it.next();
      call.abort();
      expect((await next).done).toBe(true);
      expect(getEventListeners(call.signal, 'abort')).toHaveLength(0);
    }
    expect(h.watcherCount).toBe(0);
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0);
  });

  it('stop() ends open watches with UnavailableError, refuses new ones and flushes the dispatcher', async () => {
    const { hub: h, router } = hub();
    const it = h.watch()[Symbol.asyncIterator]();
    const next = it.next();
    await new Promise((r) => setImmediate(r));
    await h.stop();
    await expect(next).rejects.toBeInstanceOf(UnavailableError);
    expect(() => h.watch()).toThrow(UnavailableError);
    expect(router.shutdowns).toBe(1);
    expect(h.watcherCount).toBe(0);
  });
});

/** A router whose channels hang until released (a webhook past its timeout, retried). */
class HangingRouter implements AlertRouter {
  readonly records: AlertRecord[] = [];
  private releases: (() => void)[] = [];
  shutdowns = 0;
  dispatch(record: AlertRecord): Promise<void> {
    this.records.push(record);
    return new Promise<void>((resolve) => this.releases.push(resolve));
  }
  release(): void {
    for (const r of this.releases.splice(0)) r();
  }
  async shutdown(): Promise<void> {
    this.shutdowns++;
  }
}

describe('AlertHub routing in the background', () => {
  it('answers a raise while its channels still hang, and keeps and fans the alert out at once', async () => {
    const router = new HangingRouter();
    const h = new AlertHub({ router, recentSize: 5, maxWatchers: 1, watchBufferSize: 4, defaultSource: 'm' });
    const seen: string[] = [];
    h.subscribe((a) => seen.push(a.title));
    const alert = await raise(h, 'slow channel');
    expect(h.recent().map((a) => a.id)).toEqual([alert.id]);
    expect(seen).toEqual(['slow channel']);
    expect(router.records.map((r) => r.id)).toEqual([alert.id]);
    expect(h.pendingDispatches).toBe(1);
    router.release();
    await h.settled();
    expect(h.pendingDispatches).toBe(0);
  });

  it('refuses a raise with ResourceExhaustedError at maxPendingDispatches, keeping nothing of it', async () => {
    const router = new HangingRouter();
    const h = new AlertHub({
      router,
      recentSize: 10,
      maxWatchers: 1,
      watchBufferSize: 4,
      defaultSource: 'm',
      maxPendingDispatches: 3,
    });
    for (const t of ['a', 'b', 'c']) await raise(h, t);
    await expect(raise(h, 'd')).rejects.toBeInstanceOf(ResourceExhaustedError);
    expect(h.recent().map((a) => a.title)).toEqual(['c', 'b', 'a']);
    expect(router.records).toHaveLength(3);
    router.release();
    await h.settled();
    await raise(h, 'e'); // a freed place is taken again
    expect(router.records.map((r) => r.title)).toEqual(['a', 'b', 'c', 'e']);
    router.release();
  });

  it('a routing that fails is logged and frees its place', async () => {
    const errors: unknown[] = [];
    const logger = {
      child: () => logger,
      error: (obj: unknown) => errors.push(obj),
      warn: () => undefined,
      info: () => undefined,
      debug: () => undefined,
    } as unknown as ConstructorParameters<typeof AlertHub>[0]['logger'];
    const router: AlertRouter = {
      dispatch: () => Promise.reject(new Error('channel exploded')),
      shutdown: async () => undefined,
    };
    const h = new AlertHub({
      router,
      recentSize: 5,
      maxWatchers: 1,
      watchBufferSize: 4,
      defaultSource: 'm',
      maxPendingDispatches: 1,
      logger,
    });
    await raise(h, 'one');
    await h.settled();
    expect(errors).toHaveLength(1);
    await raise(h, 'two'); // the failed one's place is free again
    await h.settled();
    expect(errors).toHaveLength(2);
  });

  it('answers a raise once the router has kept the alert (accept), not once its channels are through', async () => {
    const router = new HangingRouter();
    let keep!: () => void;
    const keeping = new Promise<void>((resolve) => (keep = resolve));
    const durable = Object.assign(router, {
      // Kept (the outbox write) when `keep` is called; delivered when the channels are released.
      accept: async (r: AlertRecord) => {
        const delivered = router.dispatch(r);
        await keeping;
        return { delivered, durable: true };
      },
    });
    const h = new AlertHub({
      router: durable,
      recentSize: 5,
      maxWatchers: 1,
      watchBufferSize: 4,
      defaultSource: 'm',
    });
    let answered = false;
    const raising = h
      .raise({ kind: 'generic', title: 'page', severity: 'high', context: { tier: 'P0_PAGE' } })
      .then(() => (answered = true));
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    expect(router.records.map((r) => r.title)).toEqual(['page']);
    expect(answered).toBe(false);
    keep();
    await raising;
    // Answered while the channel still hangs: the alert is on its way until released.
    expect(h.pendingDispatches).toBe(1);
    router.release();
    await h.settled();
    expect(h.pendingDispatches).toBe(0);
  });

  it('stop waits for the alerts on their way before the dispatcher flushes', async () => {
    const router = new HangingRouter();
    const h = new AlertHub({ router, recentSize: 5, maxWatchers: 1, watchBufferSize: 4, defaultSource: 'm' });
    await raise(h, 'in flight');
    let stopped = false;
    const stopping = h.stop().then(() => (stopped = true));
    await new Promise((r) => setImmediate(r));
    expect(stopped).toBe(false);
    expect(router.shutdowns).toBe(0);
    router.release();
    await stopping;
    expect(router.shutdowns).toBe(1);
  });
});

describe('AlertHub watch cursors across restarts', () => {
  /** The first `count` frames of a watch after `after`. */
  async function frames(h: AlertHub, after: string | undefined, count: number): Promise<string[]> {
    const out: string[] = [];
    for await (const f of h.watchFrames(after === undefined ? {} : { after })) {
      out.push(f.type === 'alert' ? `${f.alert.title}@${f.cursor}` : `${f.type}@${f.cursor}`);
      if (out.length === count) break;
    }
    return out;
  }
  const cursorOf = (frame: string) => frame.slice(frame.lastIndexOf('@') + 1);

  it('a cursor of an earlier log (a restart, another replica) gets a reset, never the later log’s alerts under its numbers', async () => {
    const start = Date.UTC(2026, 10, 29, 12, 0);
    const before = hub({ clock: { now: () => start, monotonic: () => 0 } }).hub;
    // A client watches from the start and keeps the first alert's cursor.
    const watch = before.watchFrames({})[Symbol.asyncIterator]();
    expect((await watch.next()).value).toMatchObject({ type: 'live' });
    for (let i = 0; i < 2; i++) await raise(before, `old ${i}`);
    const firstOld = (await watch.next()).value as AlertFrame;
    await watch.return?.();
    expect(firstOld).toMatchObject({ type: 'alert', alert: { title: 'old 0' } });
    const kept = firstOld.cursor;

    // The restarted monitor, a second later, raises more alerts than the earlier log did.
    const after = hub({ clock: { now: () => start + 1000, monotonic: () => 0 } }).hub;
    for (let i = 0; i < 3; i++) await raise(after, `new ${i}`);
    const [resumed] = await frames(after, kept, 1);
    expect(resumed).toMatch(/^reset@/);
    // Its numbers start past every number the earlier log handed out.
    expect(Number(cursorOf(resumed!))).toBeGreaterThan(Number(kept) + 2);
    expect(after.recent().map((a) => a.title)).toEqual(['new 2', 'new 1', 'new 0']);
  });
});
