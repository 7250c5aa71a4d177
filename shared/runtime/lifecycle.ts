/**
 * The start and stop order every service follows, written once. A composition root registers its
 * parts by role as it builds them; the order comes from the role, not from the order of the code:
 *
 *   start: storage (opened when registered), areas (started when registered, since the transport
 *          layer needs their services), workers, server (binds the ports), observability (start-up
 *          complete, readiness drives the gRPC health status);
 *   stop:  server shutdown (NOT_SERVING, drain, in-flight calls finish), workers, areas (newest
 *          first), pools (storage), exporters and observability.
 *
 * A failed step of stop() is logged and the rest still run, so one bad area never leaves a pool or
 * an exporter open; the first failure is rethrown at the end. stop() is safe at any point, after a
 * failed start included: it stops only what was started.
 */
import type { Logger } from '../logging/logger';

/** The ports a server bound. */
export interface BoundPorts {
  grpc: number;
  http: number;
}

/** Something with a start and a stop (an area such as the inbox, a worker, an exporter). */
export interface LifecyclePart {
  start?(): Promise<void> | void;
  stop?(): Promise<void> | void;
}

/** The two-port server of a service (RpcServer). */
export interface LifecycleServer {
  start(): Promise<BoundPorts>;
  shutdown(): Promise<void>;
}

/** A pool to close at the end (Storage). */
export interface LifecyclePool {
  close(): Promise<void>;
}

type Role = 'worker' | 'area' | 'pool' | 'exporter';

interface Registered {
  name: string;
  role: Role;
  started: boolean;
  part: LifecyclePart;
}

/** The order in which stop() visits the roles after the server has shut down. */
const STOP_ORDER: readonly Role[] = ['worker', 'area', 'pool', 'exporter'];

/** Runs a service's parts in the one start and stop order. */
export class ServiceLifecycle {
  private readonly parts: Registered[] = [];
  private server: { name: string; server: LifecycleServer; started: boolean } | undefined;
  private stopping: Promise<void> | undefined;

  constructor(private readonly logger: Logger) {}

  /** Registers the storage opened by `open` (now) and closes it after the areas at stop. */
  async storage<S extends LifecyclePool>(name: string, open: () => Promise<S>): Promise<S> {
    this.assertOpen();
    const storage = await open();
    this.parts.push({ name, role: 'pool', started: true, part: { stop: () => storage.close() } });
    return storage;
  }

  /**
   * Starts a domain area now (the transport layer is built from its services) and stops it after
   * the server and the workers.
   */
  async area<A extends LifecyclePart>(name: string, area: A): Promise<A> {
    this.assertOpen();
    const entry: Registered = { name, role: 'area', started: false, part: area };
    this.parts.push(entry);
    await area.start?.();
    entry.started = true;
    return area;
  }

  /** A background worker: started with the server, stopped right after the server's shutdown. */
  worker(name: string, worker: LifecyclePart): void {
    this.assertOpen();
    this.parts.push({ name, role: 'worker', started: false, part: worker });
  }

  /** The server: its ports open last at start, and its graceful shutdown comes first at stop. */
  serve(name: string, server: LifecycleServer): void {
    this.assertOpen();
    this.server = { name, server, started: false };
  }

  /**
   * Observability (the readiness watch, exporters): started once the ports are open, stopped last
   * so the shutdown itself is still logged and exported.
   */
  exporter(name: string, exporter: LifecyclePart): void {
    this.assertOpen();
    this.parts.push({ name, role: 'exporter', started: false, part: exporter });
  }

  /** Starts the workers, binds the server's ports, then starts observability. */
  async start(): Promise<BoundPorts> {
    this.assertOpen();
    if (!this.server) throw new Error('ServiceLifecycle: no server registered');
    for (const entry of this.parts.filter((p) => p.role === 'worker' && !p.started)) {
      await entry.part.start?.();
      entry.started = true;
    }
    const ports = await this.server.server.start();
    this.server.started = true;
    for (const entry of this.parts.filter((p) => p.role === 'exporter' && !p.started)) {
      await entry.part.start?.();
      entry.started = true;
    }
    return ports;
  }

  /** Stops everything started, in the stop order; safe to call more than once and at any point. */
  stop(): Promise<void> {
    this.stopping ??= this.doStop();
    return this.stopping;
  }

  private async doStop(): Promise<void> {
    let firstError: unknown;
    const attempt = async (name: string, step: () => Promise<void> | void): Promise<void> => {
      try {
        await step();
      } catch (err) {
        this.logger.error({ err, part: name }, 'stop failed; stopping the rest');
        firstError ??= err;
      }
    };
    if (this.server?.started) {
      const { name, server } = this.server;
      await attempt(name, () => server.shutdown());
    }
    for (const role of STOP_ORDER) {
      // Newest first within a role: a later area may depend on an earlier one.
      for (const entry of this.parts.filter((p) => p.role === role && p.started).reverse()) {
        const stop = entry.part.stop?.bind(entry.part);
        if (stop) await attempt(entry.name, stop);
        entry.started = false;
      }
    }
    if (firstError !== undefined) throw firstError;
  }

  private assertOpen(): void {
    if (this.stopping) throw new Error('ServiceLifecycle: already stopped');
  }
}
