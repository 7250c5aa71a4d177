/**
 * `BackendRegistry`: the one registry of named backends every channel fills with its drivers (email,
 * SMS, push, and any channel added later). It holds the drivers of a channel's backend list in config
 * order, serves the primary (the backend marked `primary`, else the first) for unnamed use, finds a
 * backend by name, gives the pipeline its view (`lookup`), one health check per backend and closes
 * them all. A channel adds only what is its own (the drivers, the payload checks, in-process sends).
 */
import { FailedPreconditionError, InvalidArgumentError } from '../../../shared/errors';
import { cutText } from '../../../shared/text/cut';
import type { Channel, DeliveryDriver } from '../delivery/driver';
import { type BackendLookup, primaryFirst } from '../delivery/routing';
import { type NamedBackend, primaryBackend } from './backend-list';

/**
 * What one backend's health probe reports, for every channel, in the mapping shape the shared
 * HealthChecker accepts. A provider that does not answer (or refuses our credentials) is `degraded`,
 * never `unhealthy`: the inbox and the durable queue still work, and deliveries wait for the provider.
 */
// A type, not an interface: health checks take `Record<string, unknown>`, which only a type alias
// satisfies without an index signature.
export type BackendHealthResult = {
  status: 'healthy' | 'degraded';
  details: {
    backend: string;
    driver: string;
    latency_ms: number;
    /** What a driver adds of its own (`cached` for a reused probe, `sessions_opened` for HTTP/2). */
    [detail: string]: unknown;
  };
  /** On failure only: a short classification, never credentials or driver text. */
  message?: string;
};

/** What a registry holds: a channel's delivery driver that can probe its provider. */
export interface RegisteredDriver extends DeliveryDriver {
  /** Probes the provider; never throws. */
  checkHealth(): Promise<BackendHealthResult>;
}

/** One backend's health check, ready for `HealthChecker.add(name, check)`. */
export interface BackendHealthCheck {
  /** `notifications.<kind>.<backend>`. */
  name: string;
  channel: Channel;
  backend: string;
  /** Probes the backend; never throws; a failing provider is `degraded`. */
  check: () => Promise<BackendHealthResult>;
}

/** How a channel describes its backends to the registry. */
export interface BackendRegistryOptions<B extends NamedBackend, D extends RegisteredDriver> {
  channel: Channel;
  /**
   * What a backend of the channel is called in errors ("no SMS backend configured", "unknown mailer
   * backend") and, lower-cased, in health check names (`notifications.mailer.<name>`).
   */
  kind: string;
  /** The validated backend list (names unique, at most one primary: `backendList`). */
  backends: readonly B[];
  /** Builds the driver of one backend; nothing should connect before the first send or probe. */
  create: (backend: B) => D;
}

/** The named backends of one channel (`B`: the channel's validated backend config). */
export class BackendRegistry<D extends RegisteredDriver, B extends NamedBackend = NamedBackend> {
  readonly channel: Channel;
  /** What a backend is called in errors and health check names. */
  readonly kind: string;
  private readonly byName = new Map<string, D>();
  private readonly primaryName: string | undefined;
  private closed: Promise<void> | undefined;

  constructor(opts: BackendRegistryOptions<B, D>) {
    this.channel = opts.channel;
    this.kind = opts.kind;
    for (const backend of opts.backends) this.byName.set(backend.name, opts.create(backend));
    this.primaryName = primaryBackend(opts.backends)?.name;
  }

  /** Backend names, in config order. */
  get names(): string[] {
    return [...this.byName.keys()];
  }

  /** The primary backend's name; undefined when none is configured. */
  get primary(): string | undefined {
    return this.primaryName;
  }

  /** Backend names with the primary first, then the others in config order (for `delivery.routing`). */
  primaryFirst(): string[] {
    return primaryFirst(this.names, this.primaryName);
  }

  /**
   * The driver named `name`, or the primary one when `name` is absent or empty.
   * FailedPreconditionError when no backend is configured; InvalidArgumentError (field `backend`) for
   * an unknown name.
   */
  get(name?: string): D {
    if (this.byName.size === 0) throw new FailedPreconditionError(`no ${this.kind} backend configured`);
    const driver = this.find(name);
    if (!driver) {
      throw new InvalidArgumentError(
        `backend: unknown ${this.kind} backend ${JSON.stringify(cutText(name!, 100))} (configured: ${this.names.join(', ')})`,
        'backend',
      );
    }
    return driver;
  }

  /** The driver named `name` (the primary when absent or empty), or undefined when there is none. */
  find(name?: string): D | undefined {
    if (this.byName.size === 0) return undefined;
    return this.byName.get(name === undefined || name === '' ? this.primaryName! : name);
  }

  /** Every backend's driver, in config order. */
  drivers(): D[] {
    return [...this.byName.values()];
  }

  /** The health check name of backend `name`: `notifications.<kind>.<name>`. */
  healthCheckName(name: string): string {
    return `notifications.${this.kind.toLowerCase()}.${name}`;
  }

  /** One health check per backend, in config order, to register with the service's HealthChecker. */
  healthChecks(): BackendHealthCheck[] {
    return this.drivers().map((d) => ({
      name: this.healthCheckName(d.name),
      channel: this.channel,
      backend: d.name,
      check: () => d.checkHealth(),
    }));
  }

  /**
   * Closes every driver's connections, once (a second call waits for the first); one that fails to
   * close does not keep the others open.
   */
  close(): Promise<void> {
    this.closed ??= Promise.allSettled(this.drivers().map((d) => d.close())).then(() => undefined);
    return this.closed;
  }
}

/**
 * The delivery pipeline's view of several channels' registries: a backend by channel and name (the
 * channel's primary when no name is given; undefined for an unknown name or channel), and each
 * channel's backend names, the primary first, for `delivery.routing`.
 */
export function registryLookup(registries: readonly BackendRegistry<RegisteredDriver>[]): BackendLookup {
  const byChannel = new Map(registries.map((r) => [r.channel, r]));
  return Object.assign(
    (channel: Channel, backend: string | undefined) => byChannel.get(channel)?.find(backend),
    { backends: (channel: Channel) => byChannel.get(channel)?.primaryFirst() ?? [] },
  );
}
