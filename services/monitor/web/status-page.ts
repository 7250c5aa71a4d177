/**
 * The monitor's status page on its HTTP port: the page at `/` with its two assets, the JSON snapshot
 * `/status.json` for scripts, and the live stream `/status/events` (server-sent events).
 *
 * Who may read it: the page shell (HTML, script, stylesheet) is public and holds no data; the data
 * routes need `Authorization: Bearer <token>` with one of the accepted tokens (`web.api_tokens` and
 * the `server.api_tokens` with the `monitor:read` scope) whenever any is configured, the same decision as the notification admin page
 * (data behind a bearer token, none in cookies, so no cross-site request can read or drive it).
 * With no token configured at all they are open, like the RPCs then (which production allows only
 * with `server.allow_unauthenticated`). See web/README.md.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { createTokenMatcher, parseBearer } from '../../../shared/auth/bearer';
import { sendJson } from '../../../shared/http/json';
import { sendJsonError, type ErrorCodeName } from '../../../shared/http/errors';
import type { Route } from '../../../shared/http/routes';
import { SECURITY_HEADERS } from '../../../shared/http/security-headers';
import {
  loadPageAssets,
  PAGE_ASSET_FILES,
  sendPageAsset,
  type StaticAsset,
} from '../../../shared/http/page-assets';
import type { Logger } from '../../../shared/logging/logger';
import { SSE_HEADERS } from '../../../shared/streams/sse';
import { StatusFeed } from './status-feed';
import type { StatusSource } from './status-source';
import type { AlertLifecycle } from '../alerts/lifecycle';
import { alertRoutes } from './alert-routes';
import { historyRoutes } from './history-routes';
import { sloHistoryRoutes } from './slo-history-routes';
import type { BudgetBurnDown } from '../slo/budget-history';
import type { TargetHistoryStore } from '../targets/history';

/** Every data path and asset of the page starts with this (the route table adds the headers under it). */
export const STATUS_PATH_PREFIX = '/status';
/** The page itself. */
export const STATUS_PAGE_PATH = '/';
/** The JSON snapshot. */
export const STATUS_JSON_PATH = '/status.json';
/** The event stream. */
export const STATUS_EVENTS_PATH = '/status/events';
/** Seconds a browser told 429 (too many open streams) waits before trying again. */
export const STREAM_RETRY_AFTER_SECONDS = 5;

/** The `web` config section as the page needs it. */
export interface StatusPageSettings {
  /** Alerts in a snapshot (newest first). */
  recent_alerts: number;
  /** Open event streams at most. */
  max_sse_connections: number;
  /** Bytes buffered towards one browser at most. */
  sse_max_buffered_bytes: number;
  /** Period of the SLO refresh on open streams. */
  slo_refresh_seconds: number;
  /** Period of heartbeat comments. */
  heartbeat_seconds: number;
}

/** What StatusPage needs. */
export interface StatusPageDeps {
  source: StatusSource;
  settings: StatusPageSettings;
  /** Bearer tokens accepted on the data routes (secret); empty: the data routes are open. */
  tokens: readonly string[];
  logger: Logger;
  /** Aborted when the server begins to shut down: open streams end. */
  shutdownSignal?: AbortSignal;
  /**
   * The alert lifecycle (issue 27): alerts grouped with their timeline, acknowledge, resolve and
   * silences from the page (alert-routes.ts); changes need a server token with `writeScope`.
   */
  alerts?: { lifecycle: AlertLifecycle; writeScope: string };
  /** Issue 29: the targets' probe history for the page's charts (web/history-routes.ts). */
  history?: { store: TargetHistoryStore; now?: () => number };
  /** Issue 29: an SLO's error-budget burn-down (SloArea.budgetHistory; web/slo-history-routes.ts). */
  sloBudget?: (name: string) => Promise<BudgetBurnDown | null>;
}

const STREAM_HEADERS: Readonly<Record<string, string>> = { ...SECURITY_HEADERS, ...SSE_HEADERS };

/** Serves the status page; its `routes()` go into the service's route table. */
export class StatusPage {
  /** The open event streams (exposed for tests and for the stop order). */
  readonly feed: StatusFeed;
  private readonly assets: ReadonlyMap<string, StaticAsset>;
  private readonly matchToken: ((given: string) => number) | undefined;
  private readonly logger: Logger;
  private readonly alerts?: StatusPageDeps['alerts'];
  private readonly history?: StatusPageDeps['history'];
  private readonly sloBudget?: StatusPageDeps['sloBudget'];
  private readonly source: StatusSource;

  constructor(deps: StatusPageDeps) {
    this.alerts = deps.alerts;
    this.history = deps.history;
    this.sloBudget = deps.sloBudget;
    this.source = deps.source;
    const s = deps.settings;
    this.logger = deps.logger.child({ component: 'status-page' });
    this.feed = new StatusFeed({
      source: deps.source,
      logger: deps.logger,
      maxConnections: s.max_sse_connections,
      maxBufferedBytes: s.sse_max_buffered_bytes,
      recentAlerts: s.recent_alerts,
      sloRefreshMs: Math.max(1, Math.round(s.slo_refresh_seconds * 1000)),
      heartbeatMs: Math.max(1, Math.round(s.heartbeat_seconds * 1000)),
      ...(deps.shutdownSignal ? { shutdownSignal: deps.shutdownSignal } : {}),
    });
    this.matchToken = deps.tokens.length > 0 ? createTokenMatcher(deps.tokens) : undefined;
    this.assets = loadPageAssets(join(__dirname, 'page'), 'status page');
  }

  /** The page's routes, for the service's route table. Unknown paths and wrong methods are the table's. */
  routes(): Route[] {
    const page = ['GET', 'HEAD'];
    return [
      this.route(page, STATUS_PAGE_PATH, (req, res) => this.sendAsset(req, res, 'index.html')),
      ...PAGE_ASSET_FILES.map((name) =>
        this.route(page, `${STATUS_PATH_PREFIX}/assets/${name}`, (req, res) =>
          this.sendAsset(req, res, name),
        ),
      ),
      this.route(page, STATUS_JSON_PATH, (req, res) => {
        if (this.authorized(req, res)) sendJson(res, 200, this.feed.snapshot(), { ...SECURITY_HEADERS });
      }),
      this.route(['GET'], STATUS_EVENTS_PATH, (req, res) => this.stream(req, res)),
      ...(this.alerts
        ? alertRoutes({
            lifecycle: this.alerts.lifecycle,
            writeScope: this.alerts.writeScope,
            authorizeRead: (req, res) => this.authorized(req, res),
            logger: this.logger,
          })
        : []),
      ...(this.history
        ? historyRoutes({
            history: this.history.store,
            targetNames: () => this.source.targets().map((t) => t.name),
            authorizeRead: (req, res) => this.authorized(req, res),
            logger: this.logger,
            ...(this.history.now ? { now: this.history.now } : {}),
          })
        : []),
      ...(this.sloBudget
        ? sloHistoryRoutes({
            budget: this.sloBudget,
            authorizeRead: (req, res) => this.authorized(req, res),
            logger: this.logger,
          })
        : []),
    ];
  }

  /** The data routes' read check, for routes added beside the page's (answers 401 itself; false then). */
  authorizeRead(req: IncomingMessage, res: ServerResponse): boolean {
    return this.authorized(req, res);
  }

  /** Ends every open stream (the server's shutdown does this too). */
  stop(): void {
    this.feed.close();
  }

  private route(
    methods: string[],
    path: string,
    serve: (req: IncomingMessage, res: ServerResponse) => void,
  ): Route {
    return {
      methods,
      path,
      handler: (req, res) => {
        // Bodies are never read: drain them so keep-alive connections stay usable.
        req.resume();
        try {
          serve(req, res);
        } catch (err) {
          this.logger.error({ err, path }, 'status page request failed');
          if (res.headersSent) res.destroy();
          else this.error(res, 'internal', 'internal error');
        }
      },
    };
  }

  private authorized(req: IncomingMessage, res: ServerResponse): boolean {
    if (!this.matchToken) return true;
    const given = parseBearer(req.headers.authorization);
    if (given !== undefined && this.matchToken(given) >= 0) return true;
    this.error(res, 'unauthenticated', 'a valid bearer token is required', {
      'WWW-Authenticate':
        given === undefined ? 'Bearer realm="monitor"' : 'Bearer realm="monitor", error="invalid_token"',
    });
    return false;
  }

  private stream(req: IncomingMessage, res: ServerResponse): void {
    if (!this.authorized(req, res)) return;
    const outcome = this.feed.open(res, { ...STREAM_HEADERS });
    if (outcome === 'too_many') {
      this.logger.info({ open: this.feed.connectionCount }, 'status stream refused: too many open streams');
      this.error(res, 'resource_exhausted', 'too many open status streams; try again shortly', {
        'Retry-After': String(STREAM_RETRY_AFTER_SECONDS),
      });
    } else if (outcome === 'shutting_down') {
      this.error(res, 'unavailable', 'shutting down');
    }
  }

  private sendAsset(req: IncomingMessage, res: ServerResponse, name: string): void {
    sendPageAsset(req, res, this.assets.get(name)!);
  }

  private error(
    res: ServerResponse,
    code: ErrorCodeName,
    message: string,
    headers: Record<string, string> = {},
  ): void {
    sendJsonError(res, code, message, { headers: { ...SECURITY_HEADERS, ...headers } });
  }
}
