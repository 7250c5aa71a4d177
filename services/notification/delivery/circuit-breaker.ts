/**
 * CircuitBreakers: one circuit breaker per backend (`channel/backend`), per process. A backend's
 * circuit opens after `failure_threshold` consecutive retryable failures (retryable, rate_limited,
 * timeouts); while open no attempt goes to it. After `cooldown_seconds` it is half-open: exactly one
 * trial attempt may go; a success closes it, another retryable failure opens it again for a new
 * cool-down. A permanent or recipient failure is an answer from a working provider: it resets the
 * count (and ends a trial as a success) without being a delivery success.
 *
 * The state lives in this process only (replicas each learn a provider's failures on their own):
 * sharing it through the database would add a write per attempt for a signal every replica gets
 * within `failure_threshold` attempts anyway.
 */
import { Gauge, type Registry } from 'prom-client';
import type { Channel, OutcomeClass } from './driver';
import { type Clock, systemClock } from '../../../shared/runtime/clock';
import { RecentOutcomes } from './recent-outcomes';

/** Where a backend's circuit stands. */
export type CircuitState = 'closed' | 'half_open' | 'open';

/** The gauge value of each state (`delivery_circuit_state`). */
export const CIRCUIT_STATE_VALUE: Readonly<Record<CircuitState, number>> = {
  closed: 0,
  half_open: 1,
  open: 2,
};

/** Settings of the breakers (`delivery.circuit_breaker`). */
export interface CircuitBreakerSettings {
  failure_threshold: number;
  cooldown_seconds: number;
}

/** What the health check and tests see of one backend's circuit. */
export interface CircuitSnapshot {
  state: CircuitState;
  /** Consecutive retryable failures so far. */
  consecutive_failures: number;
  /** When an open circuit lets its trial through (ISO-8601); null unless open. */
  half_open_at: string | null;
}

interface Circuit {
  failures: number;
  /** Epoch ms after which an open circuit is half-open; null when closed. */
  openUntil: number | null;
  /** A half-open trial is in flight. */
  trial: boolean;
}

const RETRYABLE: ReadonlySet<OutcomeClass> = new Set(['retryable', 'rate_limited']);

/** The breakers of one process. */
export class CircuitBreakers {
  private readonly circuits = new Map<string, Circuit>();
  private readonly cooldownMs: number;
  /** Each backend's outcomes of the last hour (the operator console). */
  readonly recent: RecentOutcomes;

  constructor(
    private readonly settings: CircuitBreakerSettings,
    private readonly clock: Clock = systemClock,
    registry?: Registry,
  ) {
    this.cooldownMs = settings.cooldown_seconds * 1000;
    this.recent = new RecentOutcomes(clock);
    if (registry) {
      // eslint-disable-next-line @typescript-eslint/no-this-alias -- collect() gets the gauge as `this`
      const breakers = this;
      new Gauge({
        name: 'delivery_circuit_state',
        help: 'Circuit breaker state per backend in this process: 0 closed, 1 half-open, 2 open.',
        labelNames: ['channel', 'backend'],
        registers: [registry],
        collect() {
          for (const key of breakers.circuits.keys()) {
            const [channel, backend] = splitKey(key);
            this.set({ channel, backend }, CIRCUIT_STATE_VALUE[breakers.state(channel, backend)]);
          }
        },
      });
    }
  }

  /**
   * Makes `backend` known (so the gauge and health show it closed before its first attempt). The
   * number of circuits is bounded by the configured backends: only names the lookup resolved get here.
   */
  register(channel: Channel, backend: string): void {
    this.circuit(channel, backend);
  }

  /** The state now. */
  state(channel: Channel, backend: string): CircuitState {
    const c = this.circuits.get(key(channel, backend));
    if (!c || c.openUntil === null) return 'closed';
    return this.clock.now() >= c.openUntil ? 'half_open' : 'open';
  }

  /** The health check's view of one backend. */
  snapshot(channel: Channel, backend: string): CircuitSnapshot {
    const c = this.circuits.get(key(channel, backend));
    const state = this.state(channel, backend);
    return {
      state,
      consecutive_failures: c?.failures ?? 0,
      half_open_at: state === 'open' && c?.openUntil ? new Date(c.openUntil).toISOString() : null,
    };
  }

  /** True when an attempt could go to the backend now (closed, or half-open with no trial running). */
  available(channel: Channel, backend: string): boolean {
    const state = this.state(channel, backend);
    if (state === 'closed') return true;
    return state === 'half_open' && !this.circuits.get(key(channel, backend))!.trial;
  }

  /**
   * Takes the right to make an attempt now: always when closed; when half-open, only the one trial
   * (released by `record` or `cancel`); never when open.
   */
  tryAcquire(channel: Channel, backend: string): boolean {
    if (!this.available(channel, backend)) return false;
    const c = this.circuit(channel, backend);
    if (c.openUntil !== null) c.trial = true;
    return true;
  }

  /**
   * When the backend may take an attempt again: the half-open time of an open circuit, or one
   * cool-down from now while a half-open trial runs; now when available.
   */
  retryAt(channel: Channel, backend: string): Date {
    const now = this.clock.now();
    const c = this.circuits.get(key(channel, backend));
    if (!c || c.openUntil === null) return new Date(now);
    if (now < c.openUntil) return new Date(c.openUntil);
    return new Date(c.trial ? now + this.cooldownMs : now);
  }

  /** Counts an attempt's outcome. */
  record(channel: Channel, backend: string, outcome: OutcomeClass): void {
    this.recent.add(channel, backend, outcome);
    const c = this.circuit(channel, backend);
    const wasTrial = c.trial;
    c.trial = false;
    if (!RETRYABLE.has(outcome)) {
      c.failures = 0;
      c.openUntil = null;
      return;
    }
    c.failures++;
    // A failed trial opens the circuit again at once; otherwise the threshold decides.
    if (wasTrial || c.failures >= this.settings.failure_threshold) {
      c.openUntil = this.clock.now() + this.cooldownMs;
    }
  }

  /** Gives a trial back without an outcome (the attempt was released at shutdown). */
  cancel(channel: Channel, backend: string): void {
    const c = this.circuits.get(key(channel, backend));
    if (c) c.trial = false;
  }

  private circuit(channel: Channel, backend: string): Circuit {
    const k = key(channel, backend);
    let c = this.circuits.get(k);
    if (!c) {
      c = { failures: 0, openUntil: null, trial: false };
      this.circuits.set(k, c);
    }
    return c;
  }
}

function key(channel: Channel, backend: string): string {
  return `${channel}\n${backend}`;
}

function splitKey(k: string): [Channel, string] {
  const i = k.indexOf('\n');
  return [k.slice(0, i) as Channel, k.slice(i + 1)];
}

/** The shape of a backend health check's result that `withCircuitState` extends. */
export interface BackendHealthResult {
  status: 'healthy' | 'degraded';
  details: object;
  message?: string;
}

/**
 * A backend's health check with its circuit in the details (`circuit`: state, consecutive failures,
 * half-open time); an open circuit makes the check degraded (never unhealthy: the queue waits).
 */
export function withCircuitState<R extends BackendHealthResult>(
  check: () => Promise<R>,
  breakers: CircuitBreakers,
  channel: Channel,
  backend: string,
): () => Promise<R | (Omit<R, 'status'> & { status: 'degraded'; message?: string })> {
  breakers.register(channel, backend);
  return async () => {
    const result = await check();
    const circuit = breakers.snapshot(channel, backend);
    const open = circuit.state === 'open';
    return {
      ...result,
      status: open ? 'degraded' : result.status,
      details: { ...result.details, circuit },
      ...(open && result.status === 'healthy'
        ? { message: 'circuit open after consecutive retryable failures' }
        : {}),
    };
  };
}
