/**
 * The health check `notifications.inbox`: one cheap store round trip. On failure the result carries
 * only the error's type; the details go to the log.
 */
import type { Logger } from '../../../shared/logging/logger';
import { silentLogger } from '../../../shared/logging/logger';
import type { InboxStoreProtocol } from './store';
import { type Clock, systemClock } from '../../../shared/runtime/clock';

/** The check's registered name. */
export const INBOX_HEALTH_CHECK_NAME = 'notifications.inbox';

/** What one run of the check reports. */
export interface InboxHealthResult {
  status: 'healthy' | 'unhealthy';
  details: { backend: 'database' | 'memory'; latency_ms: number };
  /** On failure only: the error type, e.g. "Error: inbox store check failed". */
  message?: string;
}

/** The `notifications.inbox` health check. */
export class InboxHealthCheck {
  readonly name = INBOX_HEALTH_CHECK_NAME;
  private readonly log: Logger;

  constructor(
    private readonly store: InboxStoreProtocol,
    logger: Logger = silentLogger(),
    private readonly clock: Clock = systemClock,
  ) {
    this.log = logger.child({ component: 'inbox-health' });
  }

  /** Pings the store; never throws. */
  async check(): Promise<InboxHealthResult> {
    const started = this.clock.monotonic();
    try {
      await this.store.ping();
      return {
        status: 'healthy',
        details: { backend: this.store.backend, latency_ms: this.elapsed(started) },
      };
    } catch (err) {
      this.log.error({ err, check: INBOX_HEALTH_CHECK_NAME }, 'inbox health check failed');
      const type = err instanceof Error ? err.constructor.name : 'Error';
      return {
        status: 'unhealthy',
        details: { backend: this.store.backend, latency_ms: this.elapsed(started) },
        message: `${type}: inbox store check failed`,
      };
    }
  }

  private elapsed(started: number): number {
    return Math.round((this.clock.monotonic() - started) * 100) / 100;
  }
}
