/** Helpers shared by the delivery tests: a scripted in-process driver, a manual clock, a config. */
import { randomUUID } from 'node:crypto';
import { DEFAULT_DELIVERY_CONFIG, type DeliveryConfig } from '../../../services/notification/delivery/config';
import type {
  Channel,
  DeliveryDriver,
  DriverSendContext,
  SendOutcome,
} from '../../../services/notification/delivery/driver';
import { DeliveryPipeline, type BackendLookup } from '../../../services/notification/delivery/pipeline';
import type { DeliveryStore } from '../../../services/notification/delivery/store';

import { ManualClock } from '../../support/manual-clock';
export { ManualClock };

/** A promise the test settles by hand. */
export class Gate<T = void> {
  resolve!: (value: T) => void;
  readonly promise = new Promise<T>((resolve) => (this.resolve = resolve));
}

/**
 * One programmed answer: an outcome, `hang` (until the attempt's signal aborts, then `retryable`),
 * `ignore-abort` (never settles, whatever the signal says), `throw`, or a gate the test opens.
 */
export type Step = SendOutcome | 'hang' | 'ignore-abort' | 'throw' | { gate: Gate<SendOutcome> };

/** One call the driver received. */
export interface DriverCall {
  deliveryId: string;
  attempt: number;
  payload: unknown;
}

/**
 * A DeliveryDriver whose answers the test programs: `script` queues answers in order; when the queue
 * is empty it answers `fallback` (sent, with a provider reference, by default).
 */
export class ScriptedDriver implements DeliveryDriver<unknown> {
  readonly driver = 'scripted';
  readonly calls: DriverCall[] = [];
  /** Calls currently inside send(). */
  active = 0;
  /** Most calls seen inside send() at once. */
  maxActive = 0;
  private readonly queue: Step[] = [];
  fallback: Step = { class: 'sent', providerReference: 'ref' };
  closed = false;

  constructor(
    readonly name: string,
    readonly channel: Channel = 'email',
  ) {}

  /** Queues answers, used in order. */
  script(...steps: Step[]): this {
    this.queue.push(...steps);
    return this;
  }

  async send(payload: unknown, ctx: DriverSendContext): Promise<SendOutcome> {
    this.calls.push({ deliveryId: ctx.deliveryId, attempt: ctx.attempt, payload });
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    try {
      const step = this.queue.length > 0 ? this.queue.shift()! : this.fallback;
      if (step === 'throw') throw new Error('driver exploded: secret=hunter2 at line 42');
      if (step === 'hang') {
        return await new Promise<SendOutcome>((resolve) => {
          ctx.signal.addEventListener('abort', () => resolve({ class: 'retryable', reason: 'aborted' }), {
            once: true,
          });
        });
      }
      if (step === 'ignore-abort') return await new Promise<SendOutcome>(() => undefined);
      // Anything else (a malformed answer included) is returned as it is.
      if (typeof step === 'object' && step !== null && 'gate' in step) return await step.gate.promise;
      return step as SendOutcome;
    } finally {
      this.active--;
    }
  }

  /** How many times each delivery was sent. */
  sendsById(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const c of this.calls) counts.set(c.deliveryId, (counts.get(c.deliveryId) ?? 0) + 1);
    return counts;
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

/** A push driver with `sendBatch`: one call per claimed group, every payload accepted. */
export class CountingBatchDriver extends ScriptedDriver {
  /** The size of each sendBatch call. */
  readonly batchSizes: number[] = [];
  /** How many times each payload (by its `i`) was sent. */
  readonly sent = new Map<number, number>();

  constructor(name: string) {
    super(name, 'push');
  }

  async sendBatch(payloads: readonly unknown[], _ctx: DriverSendContext): Promise<SendOutcome[]> {
    this.batchSizes.push(payloads.length);
    await new Promise((resolve) => setImmediate(resolve));
    return payloads.map((p) => {
      const i = (p as { i: number }).i;
      this.sent.set(i, (this.sent.get(i) ?? 0) + 1);
      return { class: 'sent', providerReference: `ref-${i} 📦 مرحبا 你好` };
    });
  }
}

/** A backend name no other test uses (tests share a database per file). */
export function newBackend(prefix = 'b'): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/**
 * A lookup over the given drivers: by name, the first of the channel when unnamed; `backends` lists a
 * channel's drivers in the given order (the routing order).
 */
export function lookupOf(...drivers: DeliveryDriver[]): BackendLookup {
  const find = (channel: Channel, backend: string | undefined) =>
    drivers.find((d) => d.channel === channel && (backend === undefined || d.name === backend));
  return Object.assign(find, {
    backends: (channel: Channel) => drivers.filter((d) => d.channel === channel).map((d) => d.name),
  });
}

/** A config with test-friendly defaults and the given overrides. */
export function testConfig(overrides: Partial<DeliveryConfig> = {}): DeliveryConfig {
  return { ...DEFAULT_DELIVERY_CONFIG, base_delay_ms: 1000, max_delay_ms: 60000, ...overrides };
}

/** A pipeline over `store` driven by a manual clock and a fixed jitter (0.5). */
export function buildPipeline(
  store: DeliveryStore,
  drivers: DeliveryDriver[],
  options: { clock?: ManualClock; config?: Partial<DeliveryConfig>; owner?: string } = {},
): { pipeline: DeliveryPipeline; clock: ManualClock; config: DeliveryConfig } {
  const clock = options.clock ?? new ManualClock();
  const config = testConfig(options.config);
  const pipeline = new DeliveryPipeline({
    store,
    lookup: lookupOf(...drivers),
    config,
    clock: clock,
    random: () => 0.5,
    owner: options.owner,
  });
  return { pipeline, clock, config };
}

/** Polls once and waits for every attempt that poll started. */
export async function pollAndSettle(pipeline: DeliveryPipeline): Promise<number> {
  const started = await pipeline.worker.pollOnce();
  await pipeline.worker.idle();
  return started;
}

export { waitFor } from '../../support/wait';
export { requireVmModules } from '../inbox/support';
