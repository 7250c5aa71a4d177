/**
 * The worker's two parts, used on their own (issue 24, "Files that do one thing"): the outcome
 * recorder is where a delivery becomes SENT, and the attempt runner turns every way a driver call
 * ends into an outcome for it. Memory store; the worker's own tests cover them composed.
 */
import { AttemptRunner } from '../../../services/notification/delivery/attempt-runner';
import { CircuitBreakers } from '../../../services/notification/delivery/circuit-breaker';
import { InMemoryDeliveryStore } from '../../../services/notification/delivery/memory-store';
import { allObservers, type DeliveryOutcome } from '../../../services/notification/delivery/observer';
import {
  OutcomeRecorder,
  type RecordingEntry,
} from '../../../services/notification/delivery/outcome-recorder';
import { RetryPolicy } from '../../../services/notification/delivery/retry-policy';
import { BackendRouter } from '../../../services/notification/delivery/routing';
import type { SendOutcome } from '../../../services/notification/delivery/driver';
import type { DeliveryRecord } from '../../../services/notification/delivery/types';
import { silentLogger } from '../../../shared/logging/logger';
import { dateReader } from '../../../shared/runtime/clock';
import {
  SuppressionLookupError,
  Suppressions,
  type SuppressionList,
} from '../../../services/notification/delivery/suppression';
import { InMemorySuppressionStore } from '../../../services/notification/delivery/suppression-memory-store';
import { InvalidArgumentError } from '../../../shared/errors';
import { ManualClock, ScriptedDriver, buildPipeline, lookupOf, newBackend, testConfig } from './support';

const OWNER = 'worker-parts';

/** A store holding one email delivery claimed by OWNER, and a recorder over it. */
async function claimedDelivery(driver: ScriptedDriver) {
  const store = new InMemoryDeliveryStore();
  const clock = new ManualClock();
  const config = testConfig({ max_attempts: 3 });
  const { pipeline } = buildPipeline(store, [driver], { clock, config: { max_attempts: 3 } });
  const { delivery } = await pipeline.submit({
    channel: 'email',
    recipient: 'a@example.com',
    payload: { x: 1 },
    scope: 's',
  });
  const [record] = await store.claim({
    channel: 'email',
    backend: delivery.backend,
    owner: OWNER,
    now: new Date(clock.now()),
    leaseMs: 60_000,
    limit: 1,
  });
  const breakers = new CircuitBreakers(config.circuit_breaker, clock);
  const router = new BackendRouter(lookupOf(driver), config.routing, breakers);
  const told: DeliveryOutcome[] = [];
  const woken: string[] = [];
  /** A recorder for the lease owner `owner` (OWNER holds the lease). */
  const recorderOf = (owner: string) =>
    new OutcomeRecorder({
      store,
      router,
      breakers,
      policy: new RetryPolicy(config, () => 0.5),
      maxAttempts: config.max_attempts,
      owner,
      clock: dateReader(clock),
      log: silentLogger(),
      observer: { onOutcome: (o) => told.push(o) },
      stopping: () => false,
      wake: (t) => woken.push(`${t.channel}/${t.backend}`),
    });
  const recorder = recorderOf(OWNER);
  return { store, clock, router, record: record!, recorder, recorderOf, told };
}

function entryOf(record: DeliveryRecord): RecordingEntry {
  return { record, recording: false, released: false };
}

describe('OutcomeRecorder: where a delivery becomes SENT', () => {
  test('a sent outcome under the lease makes the delivery SENT, keeps the sanitised attempt and tells the observer once', async () => {
    const driver = new ScriptedDriver('smtp');
    const { store, clock, record, recorder, told } = await claimedDelivery(driver);
    const entry = entryOf(record);

    await recorder.record(
      entry,
      1,
      driver,
      { class: 'sent', providerReference: 'ref\u0000😀\ud83d' },
      new Date(clock.now()),
      12,
    );

    expect(entry.recording).toBe(true);
    const stored = await store.get(record.id);
    expect(stored?.status).toBe('sent');
    expect(stored?.attempts).toHaveLength(1);
    expect(stored?.attempts[0]).toMatchObject({ number: 1, outcome: 'sent', backend: 'smtp' });
    // One line, the emoji whole, the lone surrogate replaced.
    expect(stored?.attempts[0]?.providerReference).toBe('ref 😀\ufffd');
    expect(told).toEqual([expect.objectContaining({ deliveryId: record.id, status: 'sent', attempts: 1 })]);
  });

  test('an outcome whose lease another worker holds changes nothing and tells nobody', async () => {
    const driver = new ScriptedDriver('smtp');
    const { store, clock, record, told, recorderOf } = await claimedDelivery(driver);
    const other = recorderOf('someone-else');

    await other.record(entryOf(record), 1, driver, { class: 'sent' }, new Date(clock.now()), 1);

    expect((await store.get(record.id))?.status).toBe('pending');
    expect(told).toEqual([]);
  });

  test('an attempt released at shutdown is not recorded', async () => {
    const driver = new ScriptedDriver('smtp');
    const { store, clock, record, recorder, told } = await claimedDelivery(driver);
    const entry = { ...entryOf(record), released: true };

    await recorder.record(entry, 1, driver, { class: 'sent' }, new Date(clock.now()), 1);

    expect(entry.recording).toBe(false);
    expect((await store.get(record.id))?.status).toBe('pending');
    expect(told).toEqual([]);
  });
});

describe('OutcomeRecorder: the suppression entry of a provider error', () => {
  /** An SMS delivery claimed by OWNER, and a recorder whose list answers `answers` in turn (then adds). */
  async function refusedSms(answers: unknown[], stopping = () => false) {
    const driver = new ScriptedDriver(newBackend('sms'), 'sms');
    const store = new InMemoryDeliveryStore();
    const clock = new ManualClock();
    const config = testConfig({ max_attempts: 3 });
    const { pipeline } = buildPipeline(store, [driver], { clock, config: { max_attempts: 3 } });
    const { delivery } = await pipeline.submit({
      channel: 'sms',
      recipient: '+15557650001',
      payload: { body: 'hi' },
      scope: 's',
    });
    const [record] = await store.claim({
      channel: 'sms',
      backend: delivery.backend,
      owner: OWNER,
      now: new Date(clock.now()),
      leaseMs: 60_000,
      limit: 1,
    });
    const breakers = new CircuitBreakers(config.circuit_breaker, clock);
    const entries = new Suppressions({ store: new InMemorySuppressionStore() });
    const tries: string[] = [];
    const list: SuppressionList = {
      add: async (entry) => {
        const answer = answers.shift();
        tries.push(answer === undefined ? 'added' : 'refused');
        if (answer !== undefined) throw answer;
        return entries.add(entry);
      },
      remove: (...a) => entries.remove(...a),
      isSuppressed: (...a) => entries.isSuppressed(...a),
    };
    const slept: number[] = [];
    const recorder = new OutcomeRecorder({
      store,
      router: new BackendRouter(lookupOf(driver), config.routing, breakers),
      breakers,
      policy: new RetryPolicy(config, () => 0.5),
      maxAttempts: config.max_attempts,
      owner: OWNER,
      clock: dateReader(clock),
      log: silentLogger(),
      suppression: list,
      stopping,
      wake: () => undefined,
      sleep: async (ms) => void slept.push(ms),
    });
    await recorder.record(
      entryOf(record!),
      1,
      driver,
      {
        class: 'recipient_failure',
        failure: 'recipient_unsubscribed',
        suppress: 'unsubscribed',
      },
      new Date(clock.now()),
      1,
    );
    return { store, record: record!, entries, tries, slept };
  }
  const timeout = () =>
    new SuppressionLookupError('timeout', 'suppression list call not answered within 10 ms');

  test('an add that times out (the list locked) is retried until it is added, not logged and lost', async () => {
    const { store, record, entries, tries, slept } = await refusedSms([timeout(), timeout()]);
    expect((await store.get(record.id))?.status).toBe('failed');
    expect(tries).toEqual(['refused', 'refused', 'added']);
    expect(slept).toHaveLength(2);
    expect(await entries.reasonsOf('sms', ['+15557650001'])).toEqual(
      new Map([['+15557650001', 'unsubscribed']]),
    );
  });

  test('an add refused for good (not unavailable) is not retried', async () => {
    const { tries, entries } = await refusedSms([new InvalidArgumentError('recipient is not a number')]);
    expect(tries).toEqual(['refused']);
    expect(await entries.isSuppressed('sms', '+15557650001')).toBe(false);
  });

  test('once the worker stops, a timed-out add is no longer retried', async () => {
    const { tries } = await refusedSms([timeout(), timeout()], () => true);
    expect(tries).toEqual(['refused']);
  });
});

describe('AttemptRunner: one attempt, every ending an outcome', () => {
  async function runOnce(answer: SendOutcome | 'throw', attemptTimeoutMs = 5000) {
    const driver = new ScriptedDriver('smtp');
    driver.script(answer as SendOutcome);
    const parts = await claimedDelivery(driver);
    const runner = new AttemptRunner({
      store: parts.store,
      router: parts.router,
      recorder: parts.recorder,
      owner: OWNER,
      clock: dateReader(parts.clock),
      log: silentLogger(),
      attemptTimeoutMs,
    });
    const entry = { ...entryOf(parts.record), controller: new AbortController() };
    await runner.run(entry, runner.route(parts.record));
    return { ...parts, driver, stored: await parts.store.get(parts.record.id) };
  }

  test('a driver answer that is no outcome is a retryable attempt with a generic reason', async () => {
    const { stored, driver } = await runOnce({ class: 'delivered?' } as unknown as SendOutcome);
    expect(driver.calls).toHaveLength(1);
    expect(stored?.status).toBe('retrying');
    expect(stored?.attempts[0]).toMatchObject({
      outcome: 'retryable',
      error: 'invalid outcome from the delivery driver',
    });
  });

  test('a driver that throws is a retryable attempt; the error itself is never stored', async () => {
    const { stored } = await runOnce('throw');
    expect(stored?.status).toBe('retrying');
    expect(stored?.attempts[0]?.error).toBe('internal error in the delivery driver');
    expect(JSON.stringify(stored)).not.toContain('hunter2');
  });

  test('a sent answer goes through the recorder: the delivery is SENT', async () => {
    const { stored, told } = await runOnce({ class: 'sent', providerReference: 'abc' });
    expect(stored?.status).toBe('sent');
    expect(stored?.attempts[0]?.providerReference).toBe('abc');
    expect(told.map((o) => o.status)).toEqual(['sent']);
  });
});

describe('DeliveryOutcome.recipient and allObservers', () => {
  test('an email outcome carries no recipient (a list says nothing about whom an answer was about)', async () => {
    const driver = new ScriptedDriver('smtp');
    const { clock, record, recorder, told } = await claimedDelivery(driver);
    await recorder.record(entryOf(record), 1, driver, { class: 'sent' }, new Date(clock.now()), 1);
    expect(told).toHaveLength(1);
    expect(told[0]).not.toHaveProperty('recipient');
  });

  test('allObservers tells each observer, skips the undefined, and one that throws does not silence the next', () => {
    const heard: string[] = [];
    const outcome = { deliveryId: 'd' } as DeliveryOutcome;
    const combined = allObservers(
      {
        onOutcome: () => {
          throw new Error('first observer broke');
        },
      },
      undefined,
      { onOutcome: (o) => void heard.push(o.deliveryId) },
    );
    expect(() => combined.onOutcome(outcome)).toThrow('first observer broke');
    expect(heard).toEqual(['d']);
  });
});
