/**
 * Maps the readiness aggregate to a serving flag, for the gRPC health service
 * (`grpc.health.v1.Health`: SERVING / NOT_SERVING) and for drain logic.
 */
import { type Timers, type TimerHandle, systemTimers } from '../../runtime/clock';
import { type HealthReport, HealthStatus } from './result';

/** True when an aggregate should keep taking traffic: HEALTHY or DEGRADED. */
export function isServing(status: HealthStatus): boolean {
  return status === HealthStatus.HEALTHY || status === HealthStatus.DEGRADED;
}

/** A running readiness watch. */
export interface ReadinessWatch {
  /** The last serving flag, undefined before the first poll finished. */
  readonly serving: boolean | undefined;
  /** Polls now and resolves to the serving flag. */
  poll(): Promise<boolean>;
  /** Stops polling; safe to call repeatedly. */
  stop(): void;
}

/**
 * Polls `source.runReadiness()` now and every `intervalMs`, calling `onChange(serving, status)` on
 * the first result and whenever the serving flag changes. A readiness run that throws counts as
 * not serving.
 */
export function watchReadiness(
  source: { runReadiness(): Promise<HealthReport> },
  intervalMs: number,
  onChange: (serving: boolean, status: HealthStatus) => void,
  options: { timers?: Timers } = {},
): ReadinessWatch {
  const timers = options.timers ?? systemTimers;
  let serving: boolean | undefined;
  let stopped = false;
  let handle: TimerHandle | undefined;
  const poll = async (): Promise<boolean> => {
    let status: HealthStatus;
    try {
      status = (await source.runReadiness()).status;
    } catch {
      status = HealthStatus.UNHEALTHY;
    }
    const next = isServing(status);
    if (!stopped && next !== serving) {
      serving = next;
      onChange(next, status);
    }
    return next;
  };
  void poll();
  handle = timers.setInterval(() => void poll(), intervalMs);
  return {
    get serving() {
      return serving;
    },
    poll,
    stop() {
      stopped = true;
      if (handle !== undefined) timers.clearInterval(handle);
      handle = undefined;
    },
  };
}
