/**
 * A health probe result reused for a while: probes of a provider cost a connection, and /health may
 * be asked every few seconds by several probers. Concurrent callers share one running probe.
 */
import { type Clock, systemClock } from '../../../../shared/runtime/clock';
import type { BackendHealthResult } from '../backend-registry';

/** Reuses a probe's result for `ttlMs`; the reused result says `cached: true` in its details. */
export class ProbeCache<R extends BackendHealthResult> {
  private last: { result: R; at: number } | undefined;
  private running: Promise<R> | undefined;

  constructor(
    private readonly probe: () => Promise<R>,
    private readonly ttlMs: number,
    private readonly clock: Clock = systemClock,
  ) {}

  /** The cached result while fresh (marked `cached`), else a new probe's. */
  get(): Promise<R> {
    if (this.last && this.clock.monotonic() - this.last.at < this.ttlMs) {
      return Promise.resolve({ ...this.last.result, details: { ...this.last.result.details, cached: true } });
    }
    this.running ??= this.probe()
      .then((result) => {
        this.last = { result, at: this.clock.monotonic() };
        return result;
      })
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }
}
