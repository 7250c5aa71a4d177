/**
 * Health records: HealthStatus, HealthCheckCategory, HealthCheckResult, the aggregate rule and the
 * report a run of several checks produces.
 */

/** Status of one check or of an aggregate. UNKNOWN is the result of an unregistered check name. */
export enum HealthStatus {
  HEALTHY = 'healthy',
  DEGRADED = 'degraded',
  UNHEALTHY = 'unhealthy',
  UNKNOWN = 'unknown',
}

/**
 * What a check tells an orchestrator: LIVENESS (alive, not deadlocked; failure restarts), READINESS
 * (can take traffic; failure removes it from rotation), STARTUP (start-up finished).
 */
export enum HealthCheckCategory {
  LIVENESS = 'liveness',
  READINESS = 'readiness',
  STARTUP = 'startup',
}

/** JSON form of a HealthCheckResult. */
export interface HealthCheckResultDict {
  component: string;
  status: HealthStatus;
  message: string | null;
  error: string | null;
  duration_ms: number | null;
  details: Record<string, unknown>;
  checked_at: string;
  category: HealthCheckCategory | null;
}

/** Fields of a HealthCheckResult. */
export interface HealthCheckResultInit {
  component: string;
  status: HealthStatus;
  message?: string | null;
  /** Error type only (for example `ConnectionError`); never the error's text. */
  error?: string | null;
  durationMs?: number | null;
  details?: Record<string, unknown>;
  /** Epoch milliseconds; now by default. */
  checkedAt?: number;
  category?: HealthCheckCategory | null;
}

/** The outcome of one health check. */
export class HealthCheckResult {
  readonly component: string;
  readonly status: HealthStatus;
  readonly message: string | null;
  readonly error: string | null;
  readonly durationMs: number | null;
  readonly details: Record<string, unknown>;
  readonly checkedAt: number;
  readonly category: HealthCheckCategory | null;

  constructor(init: HealthCheckResultInit) {
    this.component = init.component;
    this.status = init.status;
    this.message = init.message ?? null;
    this.error = init.error ?? null;
    this.durationMs = init.durationMs ?? null;
    this.details = init.details ?? {};
    this.checkedAt = init.checkedAt ?? Date.now();
    this.category = init.category ?? null;
  }

  /** A copy with some fields replaced. */
  with(changes: Partial<HealthCheckResultInit>): HealthCheckResult {
    return new HealthCheckResult({ ...this.toInit(), ...changes });
  }

  /** True when the status is HEALTHY. */
  isHealthy(): boolean {
    return this.status === HealthStatus.HEALTHY;
  }

  /** True when the status is DEGRADED. */
  isDegraded(): boolean {
    return this.status === HealthStatus.DEGRADED;
  }

  /** The JSON form. */
  toDict(): HealthCheckResultDict {
    return {
      component: this.component,
      status: this.status,
      message: this.message,
      error: this.error,
      duration_ms: this.durationMs,
      details: this.details,
      checked_at: new Date(this.checkedAt).toISOString(),
      category: this.category,
    };
  }

  private toInit(): HealthCheckResultInit {
    return {
      component: this.component,
      status: this.status,
      message: this.message,
      error: this.error,
      durationMs: this.durationMs,
      details: this.details,
      checkedAt: this.checkedAt,
      category: this.category,
    };
  }
}

/**
 * The aggregate of several results: HEALTHY when every one is HEALTHY (or there are none), DEGRADED
 * when at least one is DEGRADED and none is worse, UNHEALTHY otherwise.
 */
export function aggregateStatus(results: Iterable<HealthCheckResult>): HealthStatus {
  let degraded = false;
  for (const r of results) {
    if (r.status === HealthStatus.HEALTHY) continue;
    if (r.status === HealthStatus.DEGRADED) degraded = true;
    else return HealthStatus.UNHEALTHY;
  }
  return degraded ? HealthStatus.DEGRADED : HealthStatus.HEALTHY;
}

/** The result of running a set of checks together. */
export interface HealthReport {
  status: HealthStatus;
  /** Epoch seconds (float). */
  timestamp: number;
  /** Results by check name, in name order. */
  checks: Record<string, HealthCheckResult>;
}

/** What the health endpoint and readiness watcher read. */
export interface HealthReportSource {
  runAllWithSummary(): Promise<HealthReport>;
  runLiveness(): Promise<HealthReport>;
  runReadiness(): Promise<HealthReport>;
  runStartup(): Promise<HealthReport>;
}

/** The HTTP status of an aggregate: 200 healthy, 207 degraded, 503 otherwise. */
export function httpStatusOf(status: HealthStatus): number {
  if (status === HealthStatus.HEALTHY) return 200;
  if (status === HealthStatus.DEGRADED) return 207;
  return 503;
}

/** Parses a status given as a string (any case) or enum value; undefined when unrecognised. */
export function parseStatus(value: unknown): HealthStatus | undefined {
  if (typeof value !== 'string') return undefined;
  const v = value.toLowerCase();
  return (Object.values(HealthStatus) as string[]).includes(v) ? (v as HealthStatus) : undefined;
}
