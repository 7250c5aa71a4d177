/**
 * The one behaviour suite every DeliveryStore passes, driven through DeliveryPipeline and its worker
 * the way the service uses them, with a scripted driver and a manual clock (the worker is polled by
 * hand, so nothing depends on timers).
 */
import { Registry } from 'prom-client';
import {
  AlreadyExistsError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
} from '../../../shared/errors';
import { DeliveryPipeline } from '../../../services/notification/delivery/pipeline';
import { DeliveryRetention } from '../../../services/notification/delivery/retention';
import type { SendOutcome } from '../../../services/notification/delivery/driver';
import type { DeliveryConfig } from '../../../services/notification/delivery/config';
import type { DeliveryStore, NewDelivery } from '../../../services/notification/delivery/store';
import {
  Gate,
  ManualClock,
  ScriptedDriver,
  buildPipeline,
  lookupOf,
  newBackend,
  pollAndSettle,
  testConfig,
} from './support';
import { randomUUID } from 'node:crypto';
import { describeDeliveryEventContract } from './delivery-events-contract';

/** What a backend's test file provides to the contract. */
export interface ContractBackend {
  store: DeliveryStore;
  close(): Promise<void>;
}

const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;

/** Registers the contract suite for one store. */
export function describeDeliveryContract(name: string, open: () => Promise<ContractBackend>): void {
  describe(`${name}: delivery contract`, () => {
    let backend: ContractBackend;
    let store: DeliveryStore;

    beforeAll(async () => {
      backend = await open();
      store = backend.store;
    });

    afterAll(async () => {
      await backend?.close();
    });

    function setup(config: Parameters<typeof buildPipeline>[2] = {}) {
      const driver = new ScriptedDriver(newBackend());
      const built = buildPipeline(store, [driver], config);
      return { driver, ...built };
    }

    function submit(
      p: DeliveryPipeline,
      driver: ScriptedDriver,
      extra: Partial<Parameters<DeliveryPipeline['submit']>[0]> = {},
    ) {
      return p.submit({
        channel: 'email',
        backend: driver.name,
        recipient: 'jane.doe@example.com',
        payload: { subject: 'Hi', text: 'Hello', messageId: `<${randomUUID()}@example.com>` },
        scope: 'caller-a',
        ...extra,
      });
    }

    describe('submit', () => {
      it('when a delivery is submitted, it is committed as pending with a masked recipient and no content in the view', async () => {
        const { pipeline, driver, clock } = setup();
        const { delivery, created } = await submit(pipeline, driver);
        expect(created).toBe(true);
        expect(delivery).toMatchObject({
          channel: 'email',
          backend: driver.name,
          maskedRecipient: 'j***@example.com',
          status: 'pending',
          attempts: [],
          scope: 'caller-a',
        });
        expect(delivery.contentHash).toMatch(/^[0-9a-f]{64}$/);
        expect(delivery).not.toHaveProperty('recipient');
        expect(delivery).not.toHaveProperty('payload');
        const stored = await store.get(delivery.id);
        expect(stored?.recipient).toBe('jane.doe@example.com');
        expect(stored?.payload).toMatchObject({ subject: 'Hi' });
        expect(stored?.nextAttemptAt?.getTime()).toBe(clock.current.getTime());
        expect(driver.calls).toHaveLength(0);
      });

      it('when no backend is named, the channel primary is used', async () => {
        const { pipeline, driver } = setup();
        const { delivery } = await submit(pipeline, driver, { backend: undefined });
        expect(delivery.backend).toBe(driver.name);
      });

      it('when the backend is unknown, submit is INVALID_ARGUMENT naming backend and nothing is recorded', async () => {
        const { pipeline, driver } = setup();
        const scope = `scope-${randomUUID()}`;
        const err = await submit(pipeline, driver, { backend: 'nope', scope }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(InvalidArgumentError);
        expect((err as InvalidArgumentError).field).toBe('backend');
        expect((await pipeline.list({ scope })).deliveries).toHaveLength(0);
      });

      it('when the channel has no backend at all, submit is FAILED_PRECONDITION', async () => {
        const { pipeline, driver } = setup();
        await expect(submit(pipeline, driver, { channel: 'sms', backend: undefined })).rejects.toBeInstanceOf(
          FailedPreconditionError,
        );
      });

      it.each([
        ['recipient', { recipient: '' }],
        ['recipient', { recipient: 'a@b.c\r\nBcc: x@y.z' }],
        ['scope', { scope: '' }],
        ['idempotency_key', { idempotencyKey: 'k'.repeat(257) }],
        ['payload', { payload: undefined }],
        ['payload', { payload: { text: 'nul \u0000 here' } }],
        ['channel', { channel: 'fax' as never }],
      ])('when %s is bad, submit is INVALID_ARGUMENT naming it', async (field, extra) => {
        const { pipeline, driver } = setup();
        const err = await submit(pipeline, driver, extra).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(InvalidArgumentError);
        expect((err as InvalidArgumentError).field).toBe(field);
      });

      it('when the payload is larger than max_payload_bytes, submit is INVALID_ARGUMENT', async () => {
        const { pipeline, driver } = setup({ config: { max_payload_bytes: 100 } });
        await expect(submit(pipeline, driver, { payload: { text: 'x'.repeat(101) } })).rejects.toThrow(
          /larger than 100 bytes/,
        );
      });
    });

    describe('idempotency', () => {
      it('when the same key comes with the same content, the first delivery is returned and sent once', async () => {
        const { pipeline, driver } = setup();
        const key = `key-${randomUUID()}`;
        const payload = { subject: 'S', text: 'T' };
        const first = await submit(pipeline, driver, { idempotencyKey: key, payload });
        // Same content, keys in another order: the canonical hash is equal.
        const second = await submit(pipeline, driver, {
          idempotencyKey: key,
          payload: { text: 'T', subject: 'S' },
        });
        expect(second.created).toBe(false);
        expect(second.delivery.id).toBe(first.delivery.id);
        await pollAndSettle(pipeline);
        expect(driver.calls.map((c) => c.deliveryId)).toEqual([first.delivery.id]);
        const third = await submit(pipeline, driver, { idempotencyKey: key, payload });
        expect(third).toMatchObject({ created: false, delivery: { id: first.delivery.id, status: 'sent' } });
        await pollAndSettle(pipeline);
        expect(driver.calls).toHaveLength(1);
      });

      it('when the same key comes with other content, submit is ALREADY_EXISTS and nothing new is recorded', async () => {
        const { pipeline, driver } = setup();
        const key = `key-${randomUUID()}`;
        await submit(pipeline, driver, { idempotencyKey: key, payload: { text: 'one' } });
        await expect(
          submit(pipeline, driver, { idempotencyKey: key, payload: { text: 'two' } }),
        ).rejects.toBeInstanceOf(AlreadyExistsError);
        await expect(
          submit(pipeline, driver, {
            idempotencyKey: key,
            payload: { text: 'one' },
            recipient: 'other@example.com',
          }),
        ).rejects.toBeInstanceOf(AlreadyExistsError);
        expect((await pipeline.list({ backend: driver.name })).deliveries).toHaveLength(1);
      });

      it('when two callers use the same key, each gets its own delivery', async () => {
        const { pipeline, driver } = setup();
        const key = `key-${randomUUID()}`;
        const a = await submit(pipeline, driver, { idempotencyKey: key, scope: 'caller-a' });
        const b = await submit(pipeline, driver, { idempotencyKey: key, scope: 'caller-b' });
        expect(b.created).toBe(true);
        expect(b.delivery.id).not.toBe(a.delivery.id);
      });

      it('when the same key is submitted concurrently, exactly one delivery is created', async () => {
        const { pipeline, driver } = setup();
        const key = `key-${randomUUID()}`;
        const payload = { text: 'same' };
        const results = await Promise.all(
          Array.from({ length: 8 }, () => submit(pipeline, driver, { idempotencyKey: key, payload })),
        );
        expect(results.filter((r) => r.created)).toHaveLength(1);
        expect(new Set(results.map((r) => r.delivery.id)).size).toBe(1);
      });
    });

    describe('sending and retries', () => {
      it('when the first attempt is retryable, the record is retrying with a jittered next attempt, then sent', async () => {
        const { pipeline, driver, clock } = setup({ config: { base_delay_ms: 1000 } });
        driver.script({ class: 'retryable', reason: '451 try later', providerCode: '451' });
        const { delivery } = await submit(pipeline, driver);
        const t0 = clock.current.getTime();
        expect(await pollAndSettle(pipeline)).toBe(1);
        let record = await pipeline.get(delivery.id);
        expect(record.status).toBe('retrying');
        expect(record.lastError).toBe('451 try later');
        // Full jitter with random() = 0.5: floor(0.5 * 1000 * 2^0).
        expect(record.nextAttemptAt?.getTime()).toBe(t0 + 500);
        expect(record.attempts).toEqual([
          expect.objectContaining({
            number: 1,
            outcome: 'retryable',
            error: '451 try later',
            providerCode: '451',
          }),
        ]);
        // Not due yet: nothing is claimed.
        clock.advance(499);
        expect(await pollAndSettle(pipeline)).toBe(0);
        clock.advance(1);
        expect(await pollAndSettle(pipeline)).toBe(1);
        record = await pipeline.get(delivery.id);
        expect(record).toMatchObject({
          status: 'sent',
          providerReference: 'ref',
          nextAttemptAt: null,
          lastError: null,
        });
        expect(record.sentAt?.getTime()).toBe(clock.current.getTime());
        expect(record.attempts.map((a) => a.outcome)).toEqual(['retryable', 'sent']);
        expect(driver.calls.map((c) => c.attempt)).toEqual([1, 2]);
      });

      it('when a delivery is sent, it is never sent again', async () => {
        const { pipeline, driver, clock } = setup();
        await submit(pipeline, driver);
        await pollAndSettle(pipeline);
        clock.advance(DAY);
        expect(await pollAndSettle(pipeline)).toBe(0);
        expect(driver.calls).toHaveLength(1);
      });

      it.each(['permanent', 'recipient_failure'] as const)(
        'when an attempt is %s, the delivery fails at once and is not retried',
        async (outcome) => {
          const { pipeline, driver, clock } = setup();
          driver.script({ class: outcome, reason: '550 mailbox unavailable' });
          const { delivery } = await submit(pipeline, driver);
          await pollAndSettle(pipeline);
          clock.advance(DAY);
          await pollAndSettle(pipeline);
          const record = await pipeline.get(delivery.id);
          expect(record).toMatchObject({
            status: 'failed',
            lastError: '550 mailbox unavailable',
            nextAttemptAt: null,
          });
          expect(record.finishedAt).not.toBeNull();
          expect(driver.calls).toHaveLength(1);
        },
      );

      it('when every attempt is retryable, the delivery ends FAILED after max_attempts with the last reason', async () => {
        const { pipeline, driver, clock } = setup({ config: { max_attempts: 3 } });
        driver.script(
          { class: 'retryable', reason: 'first' },
          { class: 'retryable', reason: 'second' },
          { class: 'retryable', reason: 'third' },
        );
        const { delivery } = await submit(pipeline, driver);
        for (let i = 0; i < 5; i++) {
          await pollAndSettle(pipeline);
          clock.advance(60000);
        }
        const record = await pipeline.get(delivery.id);
        expect(record).toMatchObject({ status: 'failed', lastError: 'third' });
        expect(record.attempts.map((a) => a.error)).toEqual(['first', 'second', 'third']);
        expect(driver.calls).toHaveLength(3);
      });

      it('when the provider asks for Retry-After, the next attempt is scheduled then, capped at max_delay_ms', async () => {
        const { pipeline, driver, clock } = setup({ config: { max_delay_ms: 30000 } });
        driver.script(
          { class: 'rate_limited', reason: '429', retryAfterMs: 7000 },
          { class: 'rate_limited', reason: '429', retryAfterMs: 3_600_000 },
        );
        const { delivery } = await submit(pipeline, driver);
        const t0 = clock.current.getTime();
        await pollAndSettle(pipeline);
        expect((await pipeline.get(delivery.id)).nextAttemptAt?.getTime()).toBe(t0 + 7000);
        clock.advance(7000);
        await pollAndSettle(pipeline);
        expect((await pipeline.get(delivery.id)).nextAttemptAt?.getTime()).toBe(t0 + 7000 + 30000);
      });

      it('when the driver throws, the attempt is retryable with a generic reason that leaks nothing', async () => {
        const { pipeline, driver } = setup();
        driver.script('throw');
        const { delivery } = await submit(pipeline, driver);
        await pollAndSettle(pipeline);
        const record = await pipeline.get(delivery.id);
        expect(record.status).toBe('retrying');
        expect(record.lastError).toBe('internal error in the delivery driver');
        expect(JSON.stringify(record)).not.toContain('hunter2');
      });

      it('when an attempt outlives attempt_timeout_ms, its signal aborts and it is retried', async () => {
        const { pipeline, driver } = setup({ config: { attempt_timeout_ms: 20 } });
        driver.script('hang', 'ignore-abort');
        const first = await submit(pipeline, driver);
        const second = await submit(pipeline, driver);
        await pollAndSettle(pipeline);
        for (const id of [first.delivery.id, second.delivery.id]) {
          const record = await pipeline.get(id);
          expect(record.status).toBe('retrying');
          // Both the driver that honours its signal and the one that ignores it end as a timeout.
          expect(record.lastError).toBe('attempt timed out after 20 ms');
        }
      });

      it('when a provider reason has control characters or is huge, it is stored on one bounded line', async () => {
        const { pipeline, driver } = setup();
        driver.script({ class: 'permanent', reason: `bad\r\nInjected: yes ${'x'.repeat(2000)}` });
        const { delivery } = await submit(pipeline, driver);
        await pollAndSettle(pipeline);
        const { lastError } = await pipeline.get(delivery.id);
        expect(lastError).toMatch(/^bad Injected: yes x+…$/);
        expect(lastError!.length).toBe(500);
      });

      it('when no process here serves a backend, its deliveries stay queued (never failed) until one does', async () => {
        const { pipeline, driver, clock } = setup();
        const { delivery } = await submit(pipeline, driver);
        const other = new DeliveryPipeline({
          store,
          lookup: lookupOf(),
          config: testConfig(),
          clock: clock,
        });
        expect(await pollAndSettle(other)).toBe(0);
        expect(await pipeline.get(delivery.id)).toMatchObject({ status: 'pending', attempts: [] });
        expect(await pollAndSettle(pipeline)).toBe(1);
        expect((await pipeline.get(delivery.id)).status).toBe('sent');
      });
    });

    describe('concurrency, leases and shutdown', () => {
      it('when a backend has a concurrency override, no more attempts than that run at once', async () => {
        const driver = new ScriptedDriver(newBackend());
        const gate = new Gate<SendOutcome>();
        driver.fallback = { gate };
        const { pipeline } = buildPipeline(store, [driver], {
          config: { concurrency: 8, backend_concurrency: { [driver.name]: 2 } },
        });
        for (let i = 0; i < 5; i++) await submit(pipeline, driver);
        expect(await pipeline.worker.pollOnce()).toBe(2);
        expect(await pipeline.worker.pollOnce()).toBe(0);
        expect(pipeline.worker.activeAttempts).toBe(2);
        gate.resolve({ class: 'sent' });
        await pipeline.worker.idle();
        while ((await pollAndSettle(pipeline)) > 0);
        expect(driver.maxActive).toBe(2);
        expect(driver.calls).toHaveLength(5);
      });

      it('when the claiming process died, its lease expires and another worker sends the delivery', async () => {
        const { pipeline, driver, clock, config } = setup();
        const { delivery } = await submit(pipeline, driver);
        // A worker that claimed and then died: its claim is never completed nor released.
        const [claimed] = await store.claim({
          channel: 'email',
          backend: driver.name,
          owner: 'dead-process',
          now: clock.date(),
          leaseMs: config.lease_seconds * 1000,
          limit: 10,
        });
        expect(claimed?.id).toBe(delivery.id);
        expect(await pollAndSettle(pipeline)).toBe(0);
        clock.advance(config.lease_seconds * 1000 - 1);
        expect(await pollAndSettle(pipeline)).toBe(0);
        clock.advance(1);
        expect(await pollAndSettle(pipeline)).toBe(1);
        expect((await pipeline.get(delivery.id)).status).toBe('sent');
        // The dead worker's late answer cannot overwrite what the new owner recorded.
        const late = await store.completeAttempt(delivery.id, 'dead-process', {
          attempt: { number: 1, startedAt: clock.date(), durationMs: 1, outcome: 'permanent', error: 'late' },
          status: 'failed',
          nextAttemptAt: null,
          now: clock.date(),
        });
        expect(late).toBeNull();
        expect(await pipeline.get(delivery.id)).toMatchObject({
          status: 'sent',
          attempts: [expect.anything()],
        });
        expect(driver.calls).toHaveLength(1);
      });

      // The due order is by the time a row can next be claimed: its next attempt, or its lease's
      // expiry while an attempt is in flight (migration 20261201000000; the memory queue's heap).
      it('when attempts are in flight, claims and polls go past them; a lease that runs out is due again once, in the order of its expiry', async () => {
        const { pipeline, driver, clock, config } = setup();
        const leaseMs = config.lease_seconds * 1000;
        const t0 = clock.current.getTime();
        const claim = (owner: string, limit = 10) =>
          store.claim({ channel: 'email', backend: driver.name, owner, now: clock.date(), leaseMs, limit });
        const ids = (records: { id: string }[]) => records.map((r) => r.id);
        const due = async () =>
          (await store.dueBackends(clock.date())).some((d) => d.backend === driver.name);
        const a = (await submit(pipeline, driver)).delivery;
        // A worker takes the oldest and dies (never completes nor releases).
        expect(ids(await claim('dead', 1))).toEqual([a.id]);
        // Leased, it keeps its next attempt time (what GetDelivery shows).
        expect((await store.get(a.id))?.nextAttemptAt?.getTime()).toBe(t0);
        clock.advance(1);
        const b = (await submit(pipeline, driver)).delivery;
        expect(await due()).toBe(true);
        // The next claim goes past the leased head to the next due row, and only to it.
        expect(ids(await claim('w2'))).toEqual([b.id]);
        expect(await due()).toBe(false);
        expect(await claim('w3')).toEqual([]);
        // b is retried much later by its live owner.
        await store.completeAttempt(b.id, 'w2', {
          attempt: { number: 1, startedAt: clock.date(), durationMs: 1, outcome: 'retryable', error: 'busy' },
          status: 'retrying',
          nextAttemptAt: new Date(t0 + 10 * leaseMs),
          now: clock.date(),
        });
        // c is due halfway through the dead worker's lease.
        const moveTo = (t: number) => clock.advance(t - clock.current.getTime());
        moveTo(t0 + leaseMs / 2);
        const c = (await submit(pipeline, driver)).delivery;
        moveTo(t0 + leaseMs - 1);
        expect(await due()).toBe(true);
        // The lease ran out: a is due again, after c (due earlier than a's lease expiry).
        moveTo(t0 + leaseMs);
        expect(ids(await claim('w4', 1))).toEqual([c.id]);
        expect(ids(await claim('w5'))).toEqual([a.id]);
        // Handed to one worker only.
        expect(await claim('w6')).toEqual([]);
        expect(await due()).toBe(false);
        expect(await store.get(a.id)).toMatchObject({
          leaseOwner: 'w5',
          leaseExpiresAt: new Date(t0 + 2 * leaseMs),
          attemptsStarted: 2,
          nextAttemptAt: new Date(t0),
          status: 'pending',
        });
        // The dead worker's late answer is refused; the new owner's counts.
        const outcome = (owner: string) =>
          store.completeAttempt(a.id, owner, {
            attempt: { number: 1, startedAt: clock.date(), durationMs: 1, outcome: 'sent' },
            status: 'sent',
            nextAttemptAt: null,
            now: clock.date(),
          });
        expect(await outcome('dead')).toBeNull();
        expect((await outcome('w5'))?.status).toBe('sent');
        expect(driver.calls).toHaveLength(0);
      });

      it('when a record is final, a lease holder cannot move it backwards', async () => {
        const { pipeline, driver, clock } = setup();
        const { delivery } = await submit(pipeline, driver);
        await store.claim({
          channel: 'email',
          backend: driver.name,
          owner: 'w',
          now: clock.date(),
          leaseMs: 60000,
          limit: 1,
        });
        const attempt = { number: 1, startedAt: clock.date(), durationMs: 1, outcome: 'sent' as const };
        expect(
          await store.completeAttempt(delivery.id, 'w', {
            attempt,
            status: 'sent',
            nextAttemptAt: null,
            now: clock.date(),
          }),
        ).toMatchObject({ status: 'sent' });
        expect(
          await store.completeAttempt(delivery.id, 'w', {
            attempt: { ...attempt, outcome: 'retryable' },
            status: 'retrying',
            nextAttemptAt: clock.date(),
            now: clock.date(),
          }),
        ).toBeNull();
        expect((await pipeline.get(delivery.id)).status).toBe('sent');
      });

      it('when a batch is submitted, every record is committed at once with per-record idempotency', async () => {
        const { pipeline, driver } = setup();
        const input = (i: number, key?: string) => ({
          channel: 'email' as const,
          backend: driver.name,
          recipient: `r${i}@example.com`,
          payload: { subject: `batch ${i}`, text: 'x' },
          scope: 'caller-a',
          idempotencyKey: key,
        });
        const first = await pipeline.submitBatch([input(0, 'k0'), input(1), input(2, 'k2'), input(0, 'k0')]);
        expect(first.map((r) => r.created)).toEqual([true, true, true, false]);
        // The fourth repeats the first (same key, same content) within the batch: recorded once.
        expect(first[3]!.delivery.id).toBe(first[0]!.delivery.id);
        const again = await pipeline.submitBatch([input(2, 'k2'), input(4)]);
        expect(again.map((r) => r.created)).toEqual([false, true]);
        expect(again[0]!.delivery.id).toBe(first[2]!.delivery.id);
        await expect(pipeline.submitBatch([input(9, 'k2')])).rejects.toThrow(/different delivery/);
        const all = await pipeline.list({ backend: driver.name }, '', 50);
        expect(all.deliveries).toHaveLength(4);
        expect(all.deliveries.every((d) => d.status === 'pending')).toBe(true);
        // A bad input anywhere records nothing.
        await expect(pipeline.submitBatch([input(5), { ...input(6), recipient: '' }])).rejects.toThrow(
          /recipient is required/,
        );
        expect((await pipeline.list({ backend: driver.name }, '', 50)).deliveries).toHaveLength(4);
      });

      it('when many outcomes are recorded at once, each is judged on its own lease and status', async () => {
        const { pipeline, driver, clock } = setup();
        const ids: string[] = [];
        for (let i = 0; i < 6; i++)
          ids.push(
            (await submit(pipeline, driver, { payload: { subject: `batch ${i}`, text: 'x' } })).delivery.id,
          );
        const claimed = await store.claim({
          channel: 'email',
          backend: driver.name,
          owner: 'w',
          now: clock.date(),
          leaseMs: 60000,
          limit: 10,
        });
        expect(claimed.map((r) => r.id).sort()).toEqual([...ids].sort());
        const attempt = { number: 1, startedAt: clock.date(), durationMs: 1, outcome: 'sent' as const };
        const sent = { attempt, status: 'sent' as const, nextAttemptAt: null, now: clock.date() };
        const retry = {
          attempt: { ...attempt, outcome: 'retryable' as const, error: 'try later' },
          status: 'retrying' as const,
          nextAttemptAt: new Date(clock.date().getTime() + 1000),
          now: clock.date(),
        };
        // All issued in one turn: a database store records them in as few statements as it can.
        const results = await Promise.all([
          store.completeAttempt(ids[0]!, 'w', sent),
          store.completeAttempt(ids[1]!, 'other', sent), // not the lease holder
          store.completeAttempt(ids[2]!, 'w', retry),
          store.completeAttempt(ids[3]!, 'w', sent),
          store.completeAttempt(ids[3]!, 'w', retry), // the same record again: already final
          store.completeAttempt(ids[4]!, 'w', sent),
        ]);
        expect(results.map((r) => r?.status ?? null)).toEqual([
          'sent',
          null,
          'retrying',
          'sent',
          null,
          'sent',
        ]);
        expect(results[2]).toMatchObject({
          id: ids[2],
          lastError: 'try later',
          attempts: [{ outcome: 'retryable' }],
        });
        expect((await pipeline.get(ids[1]!)).status).toBe('pending');
        expect((await pipeline.get(ids[3]!)).attempts).toHaveLength(1);
        expect((await pipeline.get(ids[5]!)).status).toBe('pending');
      });

      it('when stopping, an attempt that finishes before the deadline is recorded', async () => {
        const { pipeline, driver } = setup();
        const gate = new Gate<SendOutcome>();
        driver.script({ gate });
        const { delivery } = await submit(pipeline, driver);
        await pipeline.worker.pollOnce();
        const stopped = pipeline.stop(new Date(Date.now() + 30000));
        gate.resolve({ class: 'sent' });
        expect(await stopped).toEqual({ finished: 1, released: 0 });
        expect((await pipeline.get(delivery.id)).status).toBe('sent');
      });

      it('when the shutdown deadline passes, unfinished attempts are released with their status kept, never failed', async () => {
        const { pipeline, driver, clock } = setup();
        driver.script('hang', 'ignore-abort');
        const a = await submit(pipeline, driver);
        const b = await submit(pipeline, driver);
        expect(await pipeline.worker.pollOnce()).toBe(2);
        expect(await pipeline.stop(new Date(Date.now() + 20))).toEqual({ finished: 0, released: 2 });
        for (const id of [a.delivery.id, b.delivery.id]) {
          const record = await store.get(id);
          expect(record).toMatchObject({
            status: 'pending',
            attempts: [],
            leaseOwner: null,
            leaseExpiresAt: null,
          });
        }
        // Another process takes them at once, without waiting for a lease to expire.
        const { pipeline: successor } = buildPipeline(store, [new ScriptedDriver(driver.name)], { clock });
        expect(await pollAndSettle(successor)).toBe(2);
        expect((await successor.get(a.delivery.id)).status).toBe('sent');
        // A stopped worker claims nothing more.
        expect(await pipeline.worker.pollOnce()).toBe(0);
      });

      it('when started, the worker sends what an earlier process left pending', async () => {
        const { pipeline, driver, clock } = setup();
        const { delivery } = await submit(pipeline, driver);
        const restarted = buildPipeline(store, [driver], { clock }).pipeline;
        restarted.start();
        try {
          await new Promise<void>((resolve, reject) => {
            const check = () =>
              void pipeline
                .get(delivery.id)
                .then((r) => (r.status === 'sent' ? resolve() : setTimeout(check, 10)), reject);
            check();
          });
        } finally {
          await restarted.stop(new Date(Date.now() + 1000));
        }
        expect(driver.calls.map((c) => c.deliveryId)).toEqual([delivery.id]);
      });
    });

    describe('get and list', () => {
      it('when an id is unknown, get is NOT_FOUND; when malformed, INVALID_ARGUMENT', async () => {
        const { pipeline } = setup();
        await expect(pipeline.get(randomUUID())).rejects.toBeInstanceOf(NotFoundError);
        await expect(pipeline.get('not-a-uuid')).rejects.toBeInstanceOf(InvalidArgumentError);
      });

      it('when paging, every delivery comes exactly once, newest first, and filters apply', async () => {
        const { pipeline, driver, clock } = setup();
        const ids: string[] = [];
        for (let i = 0; i < 7; i++) {
          // Pairs share a creation time: the id breaks the tie.
          if (i % 2 === 0) clock.advance(1000);
          ids.push((await submit(pipeline, driver)).delivery.id);
        }
        driver.script({ class: 'permanent', reason: 'no' });
        await pollAndSettle(pipeline);
        const seen: string[] = [];
        let token = '';
        do {
          const page = await pipeline.list({ backend: driver.name }, token, 3);
          expect(page.deliveries.length).toBeLessThanOrEqual(3);
          seen.push(...page.deliveries.map((d) => d.id));
          token = page.nextPageToken;
        } while (token);
        expect(new Set(seen).size).toBe(7);
        expect(seen.sort()).toEqual([...ids].sort());
        const all = (await pipeline.list({ backend: driver.name })).deliveries;
        const times = all.map((d) => d.createdAt.getTime());
        expect(times).toEqual([...times].sort((x, y) => y - x));
        expect((await pipeline.list({ backend: driver.name, status: 'failed' })).deliveries).toHaveLength(1);
        expect((await pipeline.list({ backend: driver.name, status: 'sent' })).deliveries).toHaveLength(6);
        expect((await pipeline.list({ backend: driver.name, channel: 'sms' })).deliveries).toHaveLength(0);
      });

      it('when a page token is used with another filter or is damaged, list is INVALID_ARGUMENT', async () => {
        const { pipeline, driver } = setup();
        await submit(pipeline, driver);
        await submit(pipeline, driver);
        const { nextPageToken } = await pipeline.list({ backend: driver.name }, '', 1);
        expect(nextPageToken).not.toBe('');
        await expect(
          pipeline.list({ backend: driver.name, status: 'sent' }, nextPageToken, 1),
        ).rejects.toThrow(/page_token/);
        // The failure filter is part of the binding too: a token cannot jump between failure kinds.
        await expect(
          pipeline.list({ backend: driver.name, failure: 'retries_exhausted' }, nextPageToken, 1),
        ).rejects.toThrow(/page_token/);
        await expect(pipeline.list({ backend: driver.name }, `${nextPageToken}x`, 1)).rejects.toBeInstanceOf(
          InvalidArgumentError,
        );
        await expect(pipeline.list({}, '', -1)).rejects.toBeInstanceOf(InvalidArgumentError);
        await expect(pipeline.list({ status: 'lost' as never })).rejects.toBeInstanceOf(InvalidArgumentError);
      });
    });

    describe('retention', () => {
      it('when content retention passes, payload and full recipient are erased; record, mask and attempts stay', async () => {
        const { pipeline, driver, clock, config } = setup({
          config: { content_retention_hours: 24, retention_days: 30 },
        });
        const key = `kept-${randomUUID()}`;
        const payload = { subject: 'Hi', text: 'Hello', messageId: `<${randomUUID()}@example.com>` };
        const sent = await submit(pipeline, driver, { idempotencyKey: key, payload });
        await pollAndSettle(pipeline);
        const queued = await submit(pipeline, driver, {
          backend: driver.name,
          recipient: 'queued@example.com',
        });
        await pipeline.worker.stop(new Date());
        clock.advance(24 * HOUR - 1);
        await pipeline.retention.runOnce();
        expect((await store.get(sent.delivery.id))?.payload).not.toBeNull();
        clock.advance(2);
        // A second pass within purge_interval_seconds is the periodic job's to skip: run a fresh one.
        await new DeliveryRetention({ store, config, clock: clock }).runOnce();
        const erased = await store.get(sent.delivery.id);
        expect(erased).toMatchObject({
          payload: null,
          recipient: null,
          maskedRecipient: 'j***@example.com',
          status: 'sent',
        });
        expect(erased?.attempts).toHaveLength(1);
        expect(erased?.contentErasedAt?.getTime()).toBe(clock.current.getTime());
        // A delivery still queued keeps what it has to send.
        expect((await store.get(queued.delivery.id))?.recipient).toBe('queued@example.com');
        // The idempotency key is still remembered after erasure: the same call again answers the
        // erased record and sends nothing; the key with other content is still refused.
        const again = await submit(pipeline, driver, { idempotencyKey: key, payload });
        expect(again.created).toBe(false);
        expect(again.delivery.id).toBe(sent.delivery.id);
        expect(again.payload).toBeNull();
        await expect(
          submit(pipeline, driver, { idempotencyKey: key, payload: { ...payload, text: 'Other' } }),
        ).rejects.toBeInstanceOf(AlreadyExistsError);
        expect(driver.calls).toHaveLength(1);
      });

      it('when retention_days pass, final records are deleted in batches and their keys forgotten', async () => {
        const { pipeline, driver, clock } = setup();
        const key = `key-${randomUUID()}`;
        const first = await submit(pipeline, driver, { idempotencyKey: key });
        for (let i = 0; i < 4; i++) await submit(pipeline, driver);
        await pollAndSettle(pipeline);
        clock.advance(30 * DAY + 1);
        const retention = new DeliveryRetention({
          store,
          config: { ...testConfig(), purge_batch_size: 2 },
          clock: clock,
        });
        const result = await retention.runOnce();
        expect(result.deleted).toBeGreaterThanOrEqual(5);
        expect(result.batches).toBeGreaterThanOrEqual(3);
        await expect(pipeline.get(first.delivery.id)).rejects.toBeInstanceOf(NotFoundError);
        const again = await submit(pipeline, driver, { idempotencyKey: key });
        expect(again.created).toBe(true);
      });
    });

    describe('retention while stopping', () => {
      it('when stop() is called during a large pass, it returns after the current batch', async () => {
        const { pipeline, driver, clock } = setup();
        for (let i = 0; i < 6; i++) await submit(pipeline, driver);
        await pollAndSettle(pipeline);
        clock.advance(30 * DAY + 1);
        let retention: DeliveryRetention | undefined = undefined;
        let batchesBeforeStop = 0;
        let stopped: Promise<void> | undefined;
        retention = new DeliveryRetention({
          store,
          config: { ...testConfig(), purge_batch_size: 1 },
          clock: clock,
          pause: async () => {
            batchesBeforeStop++;
            if (batchesBeforeStop === 2) stopped = retention!.stop();
          },
        });
        const result = await retention.runOnce();
        await stopped;
        expect(result.batches).toBe(2);
        expect(result.deleted).toBe(2);
        // What the stopped pass left is still there for the next one.
        expect((await pipeline.list({}, '', 50)).deliveries.length).toBeGreaterThanOrEqual(4);
      });
    });

    describe('metrics', () => {
      it('when deliveries are sent and queued, the counters, histogram and queue gauges say so', async () => {
        const registry = new Registry();
        const clock = new ManualClock(new Date('2020-01-01T00:00:00.000Z'));
        const driver = new ScriptedDriver(newBackend());
        const pipeline = new DeliveryPipeline({
          store,
          lookup: lookupOf(driver),
          config: testConfig(),
          clock: clock,
          random: () => 0.5,
          registry,
        });
        driver.script({ class: 'retryable', reason: 'x' }, { class: 'permanent', reason: 'y' });
        const before = await store.queueStats(clock.date());
        for (let i = 0; i < 3; i++) await submit(pipeline, driver);
        await pollAndSettle(pipeline);
        const text = await registry.metrics();
        expect(text).toContain(
          `notification_delivery_attempts_total{channel="email",backend="${driver.name}",outcome="sent"} 1`,
        );
        expect(text).toContain(
          `notification_deliveries_total{channel="email",backend="${driver.name}",outcome="failed"} 1`,
        );
        expect(text).toMatch(
          new RegExp(
            `notification_delivery_attempt_duration_seconds_count\\{channel="email",backend="${driver.name}"\\} 3`,
          ),
        );
        expect(text).toContain(
          `notification_delivery_queue_depth{status="retrying"} ${before.queued.retrying + 1}`,
        );
        // The retrying record is due in 500 ms; 10 s later it has waited 9.5 s past its time (the clock
        // is years before any other test's records, so it is the oldest due one).
        clock.advance(10000);
        expect(await registry.metrics()).toContain('notification_delivery_oldest_due_age_seconds 9.5');
      });
    });

    describe('routing, circuit breakers and failure kinds', () => {
      function routed(config: Partial<DeliveryConfig> = {}) {
        const a = new ScriptedDriver(newBackend('a'));
        const b = new ScriptedDriver(newBackend('b'));
        const built = buildPipeline(store, [a, b], { config });
        return { a, b, ...built };
      }
      const body = (scope: string, backend?: string) => ({
        channel: 'email' as const,
        recipient: 'jane@example.com',
        payload: { text: 'hi' },
        scope,
        ...(backend ? { backend } : {}),
      });
      const retryable: SendOutcome = { class: 'retryable', reason: 'HTTP 503' };

      it('when the primary fails retryably under fallback, the retry goes at once through the next backend', async () => {
        const { a, b, pipeline } = routed({
          routing: { email: 'fallback', sms: 'primary', push: 'primary' },
        });
        a.script(retryable);
        const { delivery } = await pipeline.submit(body(randomUUID()));
        expect(delivery.backend).toBe(a.name);
        await pollAndSettle(pipeline);
        expect(await pipeline.get(delivery.id)).toMatchObject({ status: 'retrying', backend: b.name });
        await pollAndSettle(pipeline);
        const done = await pipeline.get(delivery.id);
        expect(done).toMatchObject({ status: 'sent', backend: b.name, failure: null });
        expect(done.attempts.map((x) => x.backend)).toEqual([a.name, b.name]);
        expect([a.calls.length, b.calls.length]).toEqual([1, 1]);
      });

      it('when a request names a backend, it never fails over and ends RETRIES_EXHAUSTED', async () => {
        const { a, b, pipeline, clock } = routed({
          max_attempts: 2,
          routing: { email: 'fallback', sms: 'primary', push: 'primary' },
        });
        a.script(retryable, retryable);
        const { delivery } = await pipeline.submit(body(randomUUID(), a.name));
        await pollAndSettle(pipeline);
        clock.advance(60_000);
        await pollAndSettle(pipeline);
        const done = await pipeline.get(delivery.id);
        expect(done).toMatchObject({ status: 'failed', backend: a.name, failure: 'retries_exhausted' });
        expect(done.attempts.map((x) => x.backend)).toEqual([a.name, a.name]);
        expect(b.calls).toHaveLength(0);
      });

      it('when a circuit is open under primary routing, deliveries wait (not failed) until one trial half-opens and closes it', async () => {
        const { a, b, pipeline, clock } = routed({
          circuit_breaker: { failure_threshold: 2, cooldown_seconds: 30 },
        });
        a.script(retryable, retryable);
        const scope = randomUUID();
        const first = await pipeline.submit(body(scope));
        const second = await pipeline.submit(body(scope));
        await pollAndSettle(pipeline);
        expect(pipeline.breakers.state('email', a.name)).toBe('open');
        clock.advance(5_000); // past the retry backoff, within the cool-down
        expect(await pollAndSettle(pipeline)).toBe(0);
        expect(a.calls).toHaveLength(2);
        expect((await pipeline.get(first.delivery.id)).status).toBe('retrying');
        clock.advance(25_000);
        expect(pipeline.breakers.state('email', a.name)).toBe('half_open');
        expect(await pollAndSettle(pipeline)).toBe(1); // the one trial
        expect(pipeline.breakers.state('email', a.name)).toBe('closed');
        await pollAndSettle(pipeline);
        for (const d of [first, second]) expect((await pipeline.get(d.delivery.id)).status).toBe('sent');
        expect(a.calls).toHaveLength(4);
        expect(b.calls).toHaveLength(0);
      });

      it('when a half-open trial fails, the circuit opens again for a new cool-down', async () => {
        const { a, pipeline, clock } = routed({
          circuit_breaker: { failure_threshold: 1, cooldown_seconds: 10 },
        });
        a.script(retryable, retryable);
        await pipeline.submit(body(randomUUID()));
        await pollAndSettle(pipeline);
        expect(pipeline.breakers.state('email', a.name)).toBe('open');
        clock.advance(10_000);
        expect(await pollAndSettle(pipeline)).toBe(1);
        expect(pipeline.breakers.state('email', a.name)).toBe('open');
        clock.advance(9_999);
        expect(await pollAndSettle(pipeline)).toBe(0);
      });

      it('when the primary circuit is open under fallback, new deliveries go around it; a named one is deferred to the half-open time', async () => {
        const { a, b, pipeline, clock } = routed({
          routing: { email: 'fallback', sms: 'primary', push: 'primary' },
          circuit_breaker: { failure_threshold: 1, cooldown_seconds: 30 },
        });
        a.script(retryable);
        const scope = randomUUID();
        const opened = clock.date().getTime();
        await pipeline.submit(body(scope));
        await pollAndSettle(pipeline); // opens a's circuit
        await pollAndSettle(pipeline);
        const later = await pipeline.submit(body(scope));
        const pinned = await pipeline.submit(body(scope, a.name));
        await pollAndSettle(pipeline);
        expect(a.calls).toHaveLength(1);
        expect(await pipeline.get(later.delivery.id)).toMatchObject({ status: 'sent', backend: b.name });
        const waiting = await pipeline.get(pinned.delivery.id);
        expect(waiting).toMatchObject({ status: 'pending', attempts: [] });
        expect(waiting.nextAttemptAt?.getTime()).toBe(opened + 30_000);
      });

      it('when routing is round_robin, new deliveries take the backends in turn', async () => {
        const { a, b, pipeline } = routed({
          routing: { email: 'round_robin', sms: 'primary', push: 'primary' },
        });
        const scope = randomUUID();
        const backends: string[] = [];
        for (let i = 0; i < 4; i++) backends.push((await pipeline.submit(body(scope))).delivery.backend);
        expect(backends).toEqual([a.name, b.name, a.name, b.name]);
        await pollAndSettle(pipeline);
        expect([a.calls.length, b.calls.length]).toEqual([2, 2]);
      });

      it('when deliveries fail, each carries its failure kind and ListDeliveries filters by it', async () => {
        const { a, pipeline } = routed();
        a.script(
          { class: 'recipient_failure', reason: 'gone', failure: 'recipient_unregistered' },
          { class: 'recipient_failure', reason: 'bad' },
          { class: 'permanent', reason: '401', failure: 'provider_auth' },
          { class: 'permanent', reason: 'no' },
          { class: 'sent' },
        );
        const scope = randomUUID();
        const ids: string[] = [];
        // One at a time: records due at the same instant may be claimed in any order.
        for (let i = 0; i < 5; i++) {
          ids.push((await pipeline.submit(body(scope))).delivery.id);
          await pollAndSettle(pipeline);
        }
        const kinds = await Promise.all(ids.map(async (id) => (await pipeline.get(id)).failure));
        expect(kinds).toEqual([
          'recipient_unregistered',
          'recipient_invalid',
          'provider_auth',
          'provider_rejected',
          null,
        ]);
        const page = await pipeline.list({ scope, failure: 'recipient_unregistered' });
        expect(page.deliveries.map((d) => d.id)).toEqual([ids[0]]);
        expect((await pipeline.list({ scope, failure: 'retries_exhausted' })).deliveries).toHaveLength(0);
        await expect(
          pipeline.list({ scope, failure: 'nope' as unknown as 'provider_auth' }),
        ).rejects.toBeInstanceOf(InvalidArgumentError);
      });
    });

    describeDeliveryEventContract(() => store);
  });
}

/** A NewDelivery for direct store tests. */
export function newDelivery(backend: string, at: Date): NewDelivery {
  return {
    id: randomUUID(),
    channel: 'sms',
    backend,
    recipient: '+15551234567',
    maskedRecipient: '+1555****567',
    scope: 's',
    idempotencyKey: null,
    contentHash: '0'.repeat(64),
    payload: { text: 'x' },
    createdAt: at,
  };
}
