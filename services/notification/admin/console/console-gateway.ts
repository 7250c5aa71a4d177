/**
 * The operator console (issue 29): a page at `/admin/console` and its JSON API under
 * `/admin/console/api/`, on the notification service's HTTP port beside the end-user admin page.
 *
 * Who may use it: the same bearer JWT as the admin page (AdminAuth), and the token must name an
 * operator (`admin.auth.operator_claim` holding one of `admin.auth.operator_roles`). No token: 401;
 * an end user's token: 403; both decided on the headers, before a body is read. The page shell
 * (HTML, scripts, stylesheet) is public and holds no data.
 *
 * The console is built of sections (activity, suppressions, templates, users, backends), one module
 * each under `sections/`, each giving its API routes through {@link ConsoleApi.route} (which does the
 * operator check, the bounded body, and the error body) and one page script `page/<section>.js`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { InvalidArgumentError, isDomainError, PermissionDeniedError } from '../../../../shared/errors';
import { parseBearer } from '../../../../shared/auth/bearer';
import { BODY_TOO_LARGE, readBoundedBody } from '../../../../shared/http/body';
import { sendJsonError } from '../../../../shared/http/errors';
import { loadPageAssets, sendPageAsset, type StaticAsset } from '../../../../shared/http/page-assets';
import type { Route, RouteParams } from '../../../../shared/http/routes';
import type { Logger } from '../../../../shared/logging/logger';
import type { AdminAuth, AdminPrincipal } from '../auth';
import { describeRouteError, SECURITY_HEADERS, sendError, sendJson } from '../http';

/** The console page. */
export const CONSOLE_PATH = '/admin/console';
/** Every console API path starts with this. */
export const CONSOLE_API_PATH = `${CONSOLE_PATH}/api`;
/** Largest request body a console route reads unless it says otherwise. */
export const DEFAULT_CONSOLE_BODY_BYTES = 64 * 1024;

/** One console request, authenticated as an operator. */
export interface ConsoleContext {
  req: IncomingMessage;
  res: ServerResponse;
  query: URLSearchParams;
  params: RouteParams;
  operator: AdminPrincipal;
  /** The request body (routes declared with `body`), read only after the operator check. */
  body: Buffer;
}

/** How a console route is declared. */
export interface ConsoleRouteOptions {
  /** The route reads a body of at most this many bytes (true: {@link DEFAULT_CONSOLE_BODY_BYTES}). */
  body?: boolean | number;
}

/** What a section of the console gives: its API routes and the page script that draws it. */
export interface ConsoleSection {
  /** Lower-case name: the API path segment and the page script `page/<name>.js`. */
  name: string;
  routes(api: ConsoleApi): Route[];
}

/** Builds console API routes: operator check first, then the body, then the handler; errors as JSON. */
export class ConsoleApi {
  constructor(
    private readonly auth: AdminAuth,
    private readonly logger: Logger,
  ) {}

  /**
   * A route at `/admin/console/api/<path>` (`path` without a leading slash; `:name` segments are
   * params). The handler never has to catch: a domain error becomes its JSON error body, anything
   * else a generic 500 with the cause logged.
   */
  route(
    methods: string[],
    path: string,
    serve: (ctx: ConsoleContext) => Promise<void> | void,
    options: ConsoleRouteOptions = {},
  ): Route {
    const maxBody =
      options.body === true ? DEFAULT_CONSOLE_BODY_BYTES : options.body ? options.body : undefined;
    return {
      methods,
      path: `${CONSOLE_API_PATH}/${path}`,
      handler: async (req, res, { params, query }) => {
        if (maxBody === undefined) req.resume();
        try {
          const operator = await this.authenticateOperator(req);
          let body: Buffer = EMPTY;
          if (maxBody !== undefined) {
            const read = await readBoundedBody(req, maxBody);
            if (read === BODY_TOO_LARGE) {
              sendJsonError(res, 'resource_exhausted', `the body is larger than ${maxBody} bytes`, {
                status: 413,
                headers: { ...SECURITY_HEADERS, Connection: 'close' },
              });
              return;
            }
            body = read;
          }
          await serve({ req, res, query, params, operator, body });
        } catch (err) {
          this.fail(req, res, err);
        }
      },
    };
  }

  /** The caller, who must be an operator: 401 without a valid token, 403 for an end user's. */
  async authenticateOperator(req: IncomingMessage): Promise<AdminPrincipal> {
    const principal = await this.auth.authenticate(req.headers.authorization);
    if (!principal.operator) {
      throw new PermissionDeniedError('the console is for operators; this token names no operator role');
    }
    return principal;
  }

  private fail(req: IncomingMessage, res: ServerResponse, err: unknown): void {
    if (res.headersSent) {
      this.logger.error({ err, method: req.method }, 'console request failed after the response started');
      if (!res.writableEnded) res.end();
      return;
    }
    const described = describeRouteError(err);
    if (described.status === 401) {
      const sent = parseBearer(req.headers.authorization) !== undefined;
      sendError(res, described.code, described.message, {
        'WWW-Authenticate': sent ? 'Bearer realm="console", error="invalid_token"' : 'Bearer realm="console"',
      });
      return;
    }
    if (described.log === 'error')
      this.logger.error({ err, method: req.method, path: req.url?.split('?')[0] }, 'console request failed');
    else if (described.log === 'warn') this.logger.warn({ err }, 'console request failed on a dependency');
    sendError(res, described.code, described.message);
  }
}

const EMPTY: Buffer = Buffer.alloc(0);

/** What the console needs. */
export interface ConsoleGatewayDeps {
  auth: AdminAuth;
  logger: Logger;
  sections: readonly ConsoleSection[];
}

/** The console's page and the routes of its sections. */
export class ConsoleGateway {
  private readonly api: ConsoleApi;
  private readonly assets: ReadonlyMap<string, StaticAsset>;
  private readonly sections: readonly ConsoleSection[];

  constructor(deps: ConsoleGatewayDeps) {
    this.api = new ConsoleApi(deps.auth, deps.logger.child({ component: 'console' }));
    this.sections = deps.sections;
    this.assets = loadPageAssets(
      join(__dirname, 'page'),
      'console page',
      ALL_SECTION_SCRIPTS.map((name) => `${name}.js`),
    );
  }

  /** The page, its assets and every section's API routes. */
  routes(): Route[] {
    const page = ['GET', 'HEAD'];
    const serveAsset =
      (name: string): Route['handler'] =>
      (req, res) => {
        req.resume();
        sendPageAsset(req, res, this.assets.get(name)!);
      };
    return [
      { methods: page, path: CONSOLE_PATH, handler: serveAsset('index.html') },
      ...[...this.assets.keys()]
        .filter((name) => name !== 'index.html')
        .map((name) => ({
          methods: page,
          path: `${CONSOLE_PATH}/assets/${name}`,
          handler: serveAsset(name),
        })),
      this.api.route(['GET'], 'sections', (ctx) =>
        sendJson(ctx.res, 200, {
          operator: ctx.operator.userId,
          sections: this.sections.map((s) => s.name),
        }),
      ),
      ...this.sections.flatMap((s) => s.routes(this.api)),
    ];
  }
}

/**
 * Every section's page script, served whether or not the section is enabled (a disabled one finds
 * its name missing from `GET api/sections` and stays hidden).
 */
export const ALL_SECTION_SCRIPTS = ['activity', 'suppressions', 'templates', 'users', 'backends'] as const;

/** A query parameter given at most once. */
export function singleParam(query: URLSearchParams, name: string): string | undefined {
  const values = query.getAll(name);
  if (values.length > 1) throw new InvalidArgumentError(`${name} must be given once`, name);
  return values[0];
}

/** The body as a JSON object, or INVALID_ARGUMENT. */
export function jsonObject(body: Buffer): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw new InvalidArgumentError('the body is not valid JSON', 'body');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new InvalidArgumentError('the body must be a JSON object', 'body');
  }
  return parsed as Record<string, unknown>;
}

/** True for a domain error of `code` (sections translating NOT_FOUND and the like). */
export function hasCode(err: unknown, code: string): boolean {
  return isDomainError(err) && err.code === code;
}
