/**
 * The HTTP surface of a service: one route table (method and path pattern to handler), filled by the
 * service's composition root, with one path parser. The RPC server dispatches every HTTP-port
 * request that is not a Connect RPC here: a matching route runs; a known path with another method is
 * answered 405 with `Allow`; an unknown path 404; a route marked `auth: 'api_tokens'` without a valid
 * RPC bearer token 401; a route that throws a generic 500 (cause logged).
 * Every one of those answers carries the one JSON error body of ./errors.ts.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApiTokens } from '../auth/api-tokens';
import type { Logger } from '../logging/logger';
import { sendJsonError } from './errors';

/** Path parameters of a matched route, decoded (`/read/:id` gives `{ id }`). */
export type RouteParams = Readonly<Record<string, string>>;

/** What a route gets besides the request and response. */
export interface RouteContext {
  /** The decoded path parameters. */
  params: RouteParams;
  /** The query string, parsed. */
  query: URLSearchParams;
  /** The path without its query string. */
  path: string;
}

/** A route's handler; it answers the request itself (a throw becomes a 500). */
export type RouteHandler = (req: IncomingMessage, res: ServerResponse, ctx: RouteContext) => unknown;

/** One entry of the table. */
export interface Route {
  /** HTTP methods served, upper case (`GET`, `HEAD`, `POST`). */
  methods: readonly string[];
  /** `/admin/notifications/read/:id`: literal segments and `:name` segments (one non-empty segment). */
  path: string;
  handler: RouteHandler;
  /**
   * `api_tokens`: the route needs one of the service's RPC bearer tokens (`server.api_tokens`), as
   * RPCs do; 401 otherwise. Open when the service has no tokens (it warns at start).
   */
  auth?: 'api_tokens';
  /** With `auth: 'api_tokens'`: the scope the token must hold (403 otherwise); any token when unset. */
  scope?: string;
}

/** The path and the query of a request target: the one place that splits `req.url`. */
export function parseTarget(url: string | undefined): { path: string; query: URLSearchParams } {
  const raw = url ?? '/';
  const at = raw.indexOf('?');
  return at === -1
    ? { path: raw, query: new URLSearchParams() }
    : { path: raw.slice(0, at), query: new URLSearchParams(raw.slice(at + 1)) };
}

interface CompiledRoute extends Route {
  segments: readonly string[];
}

function compile(route: Route): CompiledRoute {
  if (!route.path.startsWith('/')) throw new Error(`route path must start with /: ${route.path}`);
  if (route.methods.length === 0) throw new Error(`route ${route.path} serves no method`);
  return {
    ...route,
    methods: route.methods.map((m) => m.toUpperCase()),
    segments: route.path.split('/').slice(1),
  };
}

/** Params of `path` against `route`, undefined when it does not match; throws on bad %-encoding. */
function matchPath(route: CompiledRoute, segments: readonly string[]): Record<string, string> | undefined {
  if (segments.length !== route.segments.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < segments.length; i++) {
    const pattern = route.segments[i]!;
    const given = segments[i]!;
    if (pattern.startsWith(':')) {
      if (given === '') return undefined;
      params[pattern.slice(1)] = given;
    } else if (pattern !== given) {
      return undefined;
    }
  }
  return params;
}

/** The outcome of looking a request up. */
export type RouteMatch =
  | { kind: 'found'; route: Route; params: Record<string, string> }
  | { kind: 'wrong_method'; allow: readonly string[] }
  | { kind: 'none' };

/** A service's route table. */
export class HttpRouteTable {
  private readonly routes: CompiledRoute[] = [];
  private readonly scopes: Array<{ prefix: string; headers: Readonly<Record<string, string>> }> = [];
  private apiTokens: ApiTokens | undefined;

  /**
   * The service's RPC tokens, required by routes marked `auth: 'api_tokens'` (the RPC server sets
   * them from its own `apiTokens`: one set of tokens for RPCs and such routes). None: open.
   */
  useApiTokens(tokens: ApiTokens): this {
    this.apiTokens = tokens.enabled ? tokens : undefined;
    return this;
  }

  /** 401 without a valid token, 403 with one that lacks the route's scope, else undefined. */
  private refusal(route: Route, req: IncomingMessage): 401 | 403 | undefined {
    if (route.auth !== 'api_tokens' || !this.apiTokens) return undefined;
    const caller = this.apiTokens.authenticate(req.headers.authorization);
    if (typeof caller === 'string') return 401;
    return route.scope === undefined || caller.allows(route.scope) ? undefined : 403;
  }

  /**
   * Headers the table adds to its own answers (404, 405, 400, 500) for paths under `prefix`, so an
   * area's policy headers (the admin page's CSP) are on every response under its prefix.
   */
  setHeaders(prefix: string, headers: Readonly<Record<string, string>>): this {
    this.scopes.push({ prefix, headers });
    return this;
  }

  private headersFor(path: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const scope of this.scopes) if (path.startsWith(scope.prefix)) Object.assign(out, scope.headers);
    return out;
  }

  /** Adds routes; a path and method served twice is a wiring mistake and throws. */
  add(...routes: Route[]): this {
    for (const route of routes) {
      const compiled = compile(route);
      for (const other of this.routes) {
        if (other.path === compiled.path && other.methods.some((m) => compiled.methods.includes(m))) {
          throw new Error(`route ${compiled.methods.join(',')} ${compiled.path} is registered twice`);
        }
      }
      this.routes.push(compiled);
    }
    return this;
  }

  /** The routes, in the order added (for docs and tests). */
  list(): readonly Route[] {
    return this.routes;
  }

  /** Looks up `method` and `path`: first literal segments, then parameters, in the order added. */
  match(method: string, path: string): RouteMatch {
    const segments = path.split('/').slice(1);
    const allow = new Set<string>();
    for (const route of this.routes) {
      const params = matchPath(route, segments);
      if (!params) continue;
      if (route.methods.includes(method)) return { kind: 'found', route, params };
      for (const m of route.methods) allow.add(m);
    }
    return allow.size > 0 ? { kind: 'wrong_method', allow: [...allow] } : { kind: 'none' };
  }

  /** Answers a request: the route, 405 with `Allow`, 404, or a generic 500 when the route throws. */
  async dispatch(req: IncomingMessage, res: ServerResponse, logger: Logger): Promise<void> {
    const { path, query } = parseTarget(req.url);
    const found = this.match(req.method ?? 'GET', path);
    if (found.kind !== 'found') {
      // Bodies of refused requests are never read: drain them so the connection stays usable.
      req.resume();
      const headers = this.headersFor(path);
      if (found.kind === 'none') sendJsonError(res, 'not_found', 'no such path', { headers });
      else {
        const allow = found.allow.join(', ');
        sendJsonError(res, 'unimplemented', `method not allowed; use ${allow}`, {
          status: 405,
          headers: { ...headers, Allow: allow },
        });
      }
      return;
    }
    const refusal = this.refusal(found.route, req);
    if (refusal !== undefined) {
      // Answered on the headers; whatever body follows is dropped unread (never kept).
      req.resume();
      const headers = this.headersFor(path);
      if (refusal === 401) {
        sendJsonError(res, 'unauthenticated', 'a valid bearer token is required', {
          headers: { ...headers, 'WWW-Authenticate': 'Bearer' },
        });
      } else {
        sendJsonError(res, 'permission_denied', `this token has no "${found.route.scope}" scope`, {
          headers,
        });
      }
      return;
    }
    try {
      const params: Record<string, string> = {};
      for (const [name, raw] of Object.entries(found.params)) {
        try {
          params[name] = decodeURIComponent(raw);
        } catch {
          req.resume();
          sendJsonError(res, 'invalid_argument', `path parameter ${name} is not valid percent-encoding`, {
            headers: this.headersFor(path),
          });
          return;
        }
      }
      await found.route.handler(req, res, { params, query, path });
    } catch (err) {
      // A route whose request was answered under it (the port refused its body for the budget)
      // fails its read: that is no bug of the route.
      if (res.writableEnded)
        logger.debug({ err, method: req.method, path }, 'HTTP route ended after its answer');
      else logger.error({ err, method: req.method, path }, 'unhandled error in HTTP route');
      if (res.headersSent) res.destroy();
      else sendJsonError(res, 'internal', 'internal error', { headers: this.headersFor(path) });
    }
  }
}
