/**
 * BackendRouter: which backend of a channel a delivery goes through (`delivery.routing.<channel>`).
 * - `primary`: the first backend of the channel's list, always.
 * - `fallback`: the record's backend while its circuit lets attempts through; when it is open, the
 *   next available backend in list order; after a retryable failure the retry goes to the next
 *   backend in list order (at once; back to the start of the list only after the retry backoff).
 * - `round_robin`: new deliveries take the channel's backends in turn (skipping open circuits while
 *   another is available); retries stay on the record's backend.
 * A delivery whose caller named a backend (`backendPinned`) only ever uses that one. When no allowed
 * backend is available, the record waits (deferred to the earliest half-open time), never failed.
 */
import type { DeliveryConfig } from './config';
import type { CircuitBreakers } from './circuit-breaker';
import type { Channel, DeliveryDriver } from './driver';
import type { DeliveryRecord } from './types';

/**
 * Finds a backend: by name, or the channel's primary when `backend` is undefined. Undefined when there
 * is no such backend (or none at all for the channel). Given by the composition root.
 *
 * `backends`, when present, lists the channel's backend names in configured order (the primary
 * first): what `fallback` and `round_robin` spread over. Without it a channel has only its primary.
 */
export interface BackendLookup {
  (channel: Channel, backend: string | undefined): DeliveryDriver | undefined;
  backends?(channel: Channel): readonly string[];
}

/** Where a claimed record's attempt goes now. */
export type Route = { driver: DeliveryDriver } | { waitUntil: Date } | { missing: true };

/** Where a retry goes after a retryable failure. */
export interface NextBackend {
  backend: string;
  /** True when the retry may go at once (a different backend, forward in the list). */
  immediate: boolean;
}

/** The routing rules of one process. */
export class BackendRouter {
  private readonly turn = new Map<Channel, number>();

  constructor(
    private readonly lookup: BackendLookup,
    private readonly routing: DeliveryConfig['routing'],
    private readonly breakers: CircuitBreakers,
  ) {}

  /** The channel's routing mode. */
  mode(channel: Channel): DeliveryConfig['routing'][Channel] {
    return this.routing[channel];
  }

  /** The channel's backend names in list order (the primary alone when the lookup lists none). */
  backends(channel: Channel): readonly string[] {
    const listed = this.lookup.backends?.(channel);
    if (listed && listed.length > 0) return listed;
    const primary = this.lookup(channel, undefined);
    return primary ? [primary.name] : [];
  }

  /** The backend of a new delivery nobody named: the primary, or the next in turn for round robin. */
  pickForNew(channel: Channel, primary: DeliveryDriver): DeliveryDriver {
    if (this.routing[channel] !== 'round_robin') return primary;
    const names = this.backends(channel);
    if (names.length <= 1) return primary;
    const start = this.turn.get(channel) ?? 0;
    this.turn.set(channel, (start + 1) % names.length);
    // The one in turn, unless its circuit is open and another's is not.
    for (let i = 0; i < names.length; i++) {
      const name = names[(start + i) % names.length]!;
      if (this.breakers.state(channel, name) === 'open') continue;
      const driver = this.driver(channel, name);
      if (driver) return driver;
    }
    return this.driver(channel, names[start]!) ?? primary;
  }

  /**
   * The driver for a claimed record's attempt now (its breaker permit taken), or when to try again:
   * its own backend first; under `fallback` (not pinned) the others in list order after it.
   */
  route(record: Pick<DeliveryRecord, 'channel' | 'backend' | 'backendPinned'>): Route {
    const candidates = this.candidates(record);
    let waitUntil: Date | undefined;
    for (const name of candidates) {
      const driver = this.driver(record.channel, name);
      if (!driver) continue;
      if (this.breakers.tryAcquire(record.channel, name)) return { driver };
      const at = this.breakers.retryAt(record.channel, name);
      if (!waitUntil || at < waitUntil) waitUntil = at;
    }
    // No candidate configured at all: the worker records that as a permanent failure.
    return waitUntil ? { waitUntil } : { missing: true };
  }

  /** Where the retry after a retryable failure on `used` goes. */
  next(record: Pick<DeliveryRecord, 'channel' | 'backendPinned'>, used: string): NextBackend {
    if (record.backendPinned || this.routing[record.channel] !== 'fallback') {
      return { backend: used, immediate: false };
    }
    const names = this.backends(record.channel);
    const i = names.indexOf(used);
    if (names.length <= 1 || i < 0) return { backend: used, immediate: false };
    const j = (i + 1) % names.length;
    // Forward in the list: a different provider, no reason to wait. Wrapping back to the start means
    // every backend failed once: the backoff applies.
    return { backend: names[j]!, immediate: j > i };
  }

  private candidates(record: Pick<DeliveryRecord, 'channel' | 'backend' | 'backendPinned'>): string[] {
    if (record.backendPinned || this.routing[record.channel] !== 'fallback') return [record.backend];
    const names = this.backends(record.channel);
    const i = names.indexOf(record.backend);
    if (i < 0) return [record.backend, ...names];
    return [...names.slice(i), ...names.slice(0, i)];
  }

  private driver(channel: Channel, name: string): DeliveryDriver | undefined {
    const driver = this.lookup(channel, name);
    return driver && driver.channel === channel && driver.name === name ? driver : undefined;
  }
}

/**
 * A channel's routing order from its configured backends: the primary first, then the others in
 * config order (what `BackendLookup.backends` returns; SMS and push use it the same way).
 */
export function primaryFirst(names: readonly string[], primary: string | undefined): string[] {
  if (primary === undefined || !names.includes(primary)) return [...names];
  return [primary, ...names.filter((n) => n !== primary)];
}
