/**
 * HealthCheckProvider: the `/health` endpoint and its probes for plain Node `http`.
 *
 * `GET /health` answers `{status, timestamp, checks?}` with 200 (healthy), 207 (degraded) or 503
 * (unhealthy); `/health/live`, `/health/ready` and `/health/startup` run the checks of one category.
 * With `auth_token` set, requests need `Authorization: Bearer <token>` (401 otherwise).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Logger, silentLogger } from '../../logging/logger';
import { type Clock, systemClock } from '../../runtime/clock';
import type { HealthConfig } from '../config';
import {
  type HealthCheckResultDict,
  type HealthReport,
  type HealthReportSource,
  HealthStatus,
  httpStatusOf,
} from '../health/result';
import { chainHandler, isAuthorized, pathOf, sendMethodNotAllowed, sendUnauthorized } from './auth';
import { sendJson } from '../../http/json';
import type { RequestHandler } from './metrics-middleware';

/** Body of the health endpoint. */
export interface HealthPayload {
  status: HealthStatus;
  /** Epoch seconds (float). */
  timestamp: number;
  checks?: Record<string, HealthCheckResultDict>;
}

/** Options of HealthCheckProvider. */
export interface HealthCheckProviderOptions {
  /** Default `/health`; the probes live under it. */
  path?: string;
  auth_token?: string | null;
  /** A HealthChecker, the legacy or no-op registry; without one the endpoint reports healthy. */
  checker?: HealthReportSource;
  /** Include each check's result under `checks`. */
  include_details?: boolean;
  clock?: Clock;
  logger?: Logger;
}

type Probe = 'all' | 'live' | 'ready' | 'startup';

/** Serves `/health` and its probes. */
export class HealthCheckProvider {
  /** The health path. */
  readonly path: string;
  private readonly authToken: string | null | undefined;
  private readonly checker: HealthReportSource | undefined;
  private readonly includeDetails: boolean;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly routes: Map<string, Probe>;

  constructor(options: HealthCheckProviderOptions = {}) {
    this.path = (options.path ?? '/health').replace(/\/+$/, '') || '/';
    this.authToken = options.auth_token;
    this.checker = options.checker;
    this.includeDetails = options.include_details ?? false;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger();
    const base = this.path === '/' ? '' : this.path;
    this.routes = new Map<string, Probe>([
      [this.path, 'all'],
      [`${base}/live`, 'live'],
      [`${base}/ready`, 'ready'],
      [`${base}/startup`, 'startup'],
    ]);
  }

  /**
   * A provider for a HealthConfig (path, include_details, auth_token). The checker should be built
   * with `defaultTimeout: config.timeout` and `only: config.checks`.
   */
  static fromConfig(
    config: Partial<HealthConfig>,
    checker?: HealthReportSource,
    extra: Pick<HealthCheckProviderOptions, 'clock' | 'logger'> = {},
  ): HealthCheckProvider {
    return new HealthCheckProvider({
      path: config.path,
      include_details: config.include_details,
      auth_token: config.auth_token,
      checker,
      ...extra,
    });
  }

  /** The overall health; subclasses override it to add their own dependency checks. */
  async checkHealth(): Promise<HealthPayload> {
    if (!this.checker) return { status: HealthStatus.HEALTHY, timestamp: this.clock.now() / 1000 };
    return this.toPayload(await this.checker.runAllWithSummary());
  }

  /** The health of one probe category. */
  async checkProbe(probe: 'live' | 'ready' | 'startup'): Promise<HealthPayload> {
    if (!this.checker) return { status: HealthStatus.HEALTHY, timestamp: this.clock.now() / 1000 };
    const report =
      probe === 'live'
        ? await this.checker.runLiveness()
        : probe === 'ready'
          ? await this.checker.runReadiness()
          : await this.checker.runStartup();
    return this.toPayload(report);
  }

  /** Answers the request when it is for the health path or a probe; resolves true when it did. */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const probe = this.routes.get(pathOf(req));
    if (!probe) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendMethodNotAllowed(res);
      return true;
    }
    if (!isAuthorized(req, this.authToken)) {
      sendUnauthorized(res);
      return true;
    }
    let payload: HealthPayload;
    try {
      payload = probe === 'all' ? await this.checkHealth() : await this.checkProbe(probe);
    } catch (err) {
      this.logger.error({ err }, 'health check run failed');
      payload = { status: HealthStatus.UNHEALTHY, timestamp: this.clock.now() / 1000 };
    }
    sendJson(res, httpStatusOf(payload.status), payload);
    return true;
  }

  /**
   * A request handler: health paths are answered here, everything else goes to `next` or, without
   * one, gets a 404 JSON answer.
   */
  middleware(next?: RequestHandler): RequestHandler {
    return chainHandler(
      (req, res) => this.handle(req, res),
      next,
      (err) => this.logger.error({ err }, 'health middleware failed'),
    );
  }

  private toPayload(report: HealthReport): HealthPayload {
    const payload: HealthPayload = { status: report.status, timestamp: report.timestamp };
    if (this.includeDetails) {
      payload.checks = {};
      for (const [name, result] of Object.entries(report.checks)) payload.checks[name] = result.toDict();
    }
    return payload;
  }
}
