/**
 * The standard gRPC health protocol (`grpc.health.v1.Health`) for one process.
 *
 * Serves "" (the whole server) and every fully-qualified service name, all following readiness:
 * SERVING while ready, NOT_SERVING while starting, unready, or shutting down. Unknown names answer
 * NOT_FOUND (grpc-health-check's behaviour). Probes need no API token.
 */
import type { Server } from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';

export type ServingStatus = 'SERVING' | 'NOT_SERVING';

export class ServingStatusReporter {
  private readonly health: HealthImplementation;
  private readonly names: string[];
  private current: ServingStatus = 'NOT_SERVING';

  constructor(serviceNames: readonly string[]) {
    this.names = ['', ...serviceNames];
    this.health = new HealthImplementation(Object.fromEntries(this.names.map((n) => [n, 'NOT_SERVING'])));
  }

  /** Registers `grpc.health.v1.Health` on a grpc-js server. */
  addToServer(server: Server): void {
    this.health.addToServer(server);
  }

  /** Sets every name at once; watchers are told only on a change. */
  setServing(serving: boolean): void {
    const next: ServingStatus = serving ? 'SERVING' : 'NOT_SERVING';
    if (next === this.current) return;
    this.current = next;
    for (const name of this.names) this.health.setStatus(name, next);
  }

  get status(): ServingStatus {
    return this.current;
  }
}
