/**
 * The bound on a suppression lookup (`Suppressions` `lookupTimeoutMs`, config
 * `delivery.suppression.lookup_timeout_ms`) without a database: the wait is driven by fake timers, the
 * store is a stand-in whose query the test holds.
 */
import { Registry } from 'prom-client';
import { DeliveryConfigSchema } from '../../../services/notification/delivery/config';
import type { Channel } from '../../../services/notification/delivery/driver';
import {
  DEFAULT_SUPPRESSION_LOOKUP_TIMEOUT_MS,
  SuppressionLookupError,
  Suppressions,
  type SuppressionStore,
} from '../../../services/notification/delivery/suppression';
import { InMemorySuppressionStore } from '../../../services/notification/delivery/suppression-memory-store';
import { createLogger } from '../../../shared/logging/logger';
import { FakeTimers } from '../../shared/monitoring/helpers';
import { Gate } from './support';

const BOUND_MS = 500;

/** A database-like store whose lookups wait for `gate` (when set), recording what each query asked. */
class HeldStore implements SuppressionStore {
  readonly backend = 'database' as const;
  readonly queries: string[][] = [];
  gate?: Gate;
  failWith?: unknown;
  private readonly entries = new InMemorySuppressionStore();
  add: SuppressionStore['add'] = (entry) => this.entries.add(entry);
  remove: SuppressionStore['remove'] = (...a) => this.entries.remove(...a);
  reasonsOf: SuppressionStore['reasonsOf'] = (...a) => this.entries.reasonsOf(...a);
  list: SuppressionStore['list'] = (q) => this.entries.list(q);
  async findSuppressed(channel: Channel, recipients: readonly string[]): Promise<Set<string>> {
    this.queries.push([...recipients]);
    if (this.gate) await this.gate.promise;
    if (this.failWith) throw this.failWith;
    return this.entries.findSuppressed(channel, recipients);
  }
}

/** Lets setImmediate callbacks (the group-commit's turn) and promise continuations run. */
async function turns(n = 3): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** A promise's state, read without waiting for it. */
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
  const lines: string[] = [];
  const logger = createLogger({
    name: 'test',
    level: 'debug',
    destination: { write: (l: string) => void lines.push(l) },
  });
  const list = new Suppressions({
    store,
    lookupTimeoutMs: BOUND_MS,
    timers,
    registry,
    logger,
  });
  const timeouts = async (channel = 'sms'): Promise<number> => {
    const m = await registry.getSingleMetric('notification_suppression_lookup_timeouts_total')!.get();
    return m.values.find((v) => v.labels.channel === channel)?.value ?? 0;
  };
  return { store, timers, list, lines, timeouts };
}

describe('Suppressions lookup bound', () => {
  it('a lookup still unanswered at the bound is rejected with a timeout, not before; it is counted', async () => {
    const { store, timers, list, timeouts } = setup();
    store.gate = new Gate();
    const lookup = track(list.findSuppressed('sms', ['+15551230001']));
    await turns();
    timers.advance(BOUND_MS - 1);
    await turns();
    expect(lookup.settled).toBe(false);
    timers.advance(1);
    await turns();
    expect(lookup.error).toBeInstanceOf(SuppressionLookupError);
    expect(lookup.error).toMatchObject({ reason: 'timeout', code: 'UNAVAILABLE' });
    expect((lookup.error as Error).message).not.toContain('+15551230001');
    expect(await timeouts()).toBe(1);
    store.gate.resolve();
    await turns();
  });

  it('lookups queued behind a hung query time out too, and are never queried once their callers gave up', async () => {
    const { store, timers, list, timeouts } = setup();
    store.gate = new Gate();
    const first = track(list.findSuppressed('sms', ['+15551230001']));
    await turns();
    // The first group's query holds the one lookup slot: the next lookups queue behind it.
    const queued = [
      track(list.findSuppressed('sms', ['+15551230002'])),
      track(list.findSuppressed('email', ['a@example.com'])),
    ];
    await turns();
    expect(store.queries).toEqual([['+15551230001']]);
    timers.advance(BOUND_MS);
    await turns();
    for (const l of [first, ...queued]) expect(l.error).toMatchObject({ reason: 'timeout' });
    expect(await timeouts('sms')).toBe(2);
    expect(await timeouts('email')).toBe(1);
    // The hung query ends: the abandoned group behind it costs no query.
    store.gate.resolve();
    await turns(6);
    expect(store.queries).toEqual([['+15551230001']]);
    // And the list answers again.
    store.gate = undefined;
    await list.add({ channel: 'sms', recipient: '+15551230003', reason: 'manual', source: 'api:t' });
    expect(await list.findSuppressed('sms', ['+15551230003', '+15551230004'])).toEqual(
      new Set(['+15551230003']),
    );
  });

  it('a lookup answered in time resolves as before, its timer cleared, nothing counted', async () => {
    const { timers, list, timeouts } = setup();
    await list.add({
      channel: 'email',
      recipient: 'gone@example.com',
      reason: 'hard_bounce',
      source: 'api:t',
    });
    const found = await list.findSuppressed('email', ['gone@example.com', 'ok@example.com']);
    expect(found).toEqual(new Set(['gone@example.com']));
    expect(timers.pending).toBe(0);
    expect(await timeouts('email')).toBe(0);
  });

  it('a failing query is rejected as SuppressionLookupError `failed` with its SQLSTATE, and neither it nor the log carries the recipients', async () => {
    const { store, list, lines, timeouts } = setup();
    // As knex words a driver error: the statement with its bindings, then the driver's text.
    store.failWith = Object.assign(
      new Error(
        "SELECT recipient FROM suppressions WHERE channel = 'sms' AND recipient = ANY('{+15551230009}') - relation does not exist",
      ),
      { code: '42P01' },
    );
    const err = await list.findSuppressed('sms', ['+15551230009']).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SuppressionLookupError);
    expect(err).toMatchObject({ reason: 'failed', sqlState: '42P01' });
    expect((err as Error).message).not.toContain('+15551230009');
    expect(lines.join('\n')).toContain('suppression lookup failed');
    expect(lines.join('\n')).not.toContain('+15551230009');
    expect(await timeouts()).toBe(0);
  });

  it('the memory store answers at once, without a timer', async () => {
    const timers = new FakeTimers();
    const list = new Suppressions({ store: new InMemorySuppressionStore(), lookupTimeoutMs: 10, timers });
    await list.add({
      channel: 'push',
      recipient: 'tok-🔔-令牌-رمز',
      reason: 'unregistered_token',
      source: 'api:t',
    });
    expect(await list.findSuppressed('push', ['tok-🔔-令牌-رمز', 'other'])).toEqual(
      new Set(['tok-🔔-令牌-رمز']),
    );
    expect(timers.pending).toBe(0);
  });
});

describe('delivery.suppression.lookup_timeout_ms', () => {
  const parse = (value: unknown) =>
    DeliveryConfigSchema.safeParse({ suppression: { lookup_timeout_ms: value } });
  const messageOf = (value: unknown): string => {
    const result = parse(value);
    expect(result.success).toBe(false);
    const issue = result.error!.issues[0]!;
    expect(issue.path).toEqual(['suppression', 'lookup_timeout_ms']);
    return issue.message;
  };

  it('defaults to 2000 ms', () => {
    expect(DEFAULT_SUPPRESSION_LOOKUP_TIMEOUT_MS).toBe(2000);
    expect(DeliveryConfigSchema.parse({}).suppression.lookup_timeout_ms).toBe(2000);
  });

  it('takes 10 ms and 60000 ms, its bounds', () => {
    expect(parse(10).data?.suppression.lookup_timeout_ms).toBe(10);
    expect(parse(60_000).data?.suppression.lookup_timeout_ms).toBe(60_000);
  });

  it('refuses 9 ms and 60001 ms, past its bounds, naming the bound', () => {
    expect(messageOf(9)).toBe('expected at least 10');
    expect(messageOf(60_001)).toBe('expected at most 60000');
  });

  it('refuses what is not a positive integer', () => {
    for (const bad of ['abc', 1.5, 0, -1, null]) expect(messageOf(bad)).toMatch(/expected/);
  });
});
