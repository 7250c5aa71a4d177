/**
 * The admin HTTP gateway of the notification service: the current user's inbox as JSON, marking
 * read, a server-sent-events stream of inbox events, and the management page with its two assets.
 *
 * Its `routes()` go into the service's route table (shared/http/routes.ts), which also answers
 * unknown paths (404) and wrong methods (405 with `Allow`) with the same JSON error body.
 * Every data route requires `Authorization: Bearer <JWT>` (see AdminAuth); no cookies are read, so
 * the state-changing routes cannot be driven by a cross-site form or image.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { Logger } from '../../../shared/logging/logger';
import { InvalidArgumentError, isDomainError } from '../../../shared/errors';
import { isUuid } from '../../../shared/runtime/ids';
import { pageSizeParam } from '../../../shared/storage/page-size';
import type { InboxEvent, InboxMessage, InboxServiceContract } from '../inbox/types';
import type { CategoryConfig, NotifyChannel } from '../notify/config';
import type { Preference, PreferenceBook, PreferenceChoice } from '../users/preferences/types';
import { BODY_TOO_LARGE, readBoundedBody } from '../../../shared/http/body';
import { sendJsonError } from '../../../shared/http/errors';
import { parseBearer } from '../../../shared/auth/bearer';
import type { AdminAuth, AdminPrincipal } from './auth';
import type { Route, RouteParams } from '../../../shared/http/routes';
import {
  loadPageAssets,
  PAGE_ASSET_FILES,
  sendPageAsset,
  type StaticAsset,
} from '../../../shared/http/page-assets';
import { describeRouteError, SECURITY_HEADERS, sendError, sendJson } from './http';
import { sseComment, sseFrame } from '../../../shared/streams/sse';
import { DEFAULT_SSE_HEARTBEAT_MS, SseResponse } from '../../../shared/streams/sse-response';

/** What AdminGateway needs. */
export interface AdminGatewayDeps {
  inbox: InboxServiceContract;
  auth: AdminAuth;
  logger: Logger;
  /** inbox.max_page_size: the largest `limit` accepted, and the default. */
  maxPageSize: number;
  /** Interval of SSE heartbeat comments; default 15 s. */
  heartbeatMs?: number;
  /** Aborted when the server starts shutting down: open event streams end, browsers reconnect. */
  shutdownSignal?: AbortSignal;
  /** The current user's preferences (`GET`/`PUT /admin/notifications/preferences`); none: no routes. */
  preferences?: AdminPreferencesDeps;
}

/** What the preferences routes need. */
export interface AdminPreferencesDeps {
  book: PreferenceBook;
  /** `notify.categories`: the descriptions the page shows. */
  categories: readonly CategoryConfig[];
}

/** One category of `GET /admin/notifications/preferences`, its channels in config order. */
export interface AdminPreferenceCategoryJson {
  name: string;
  description: string;
  /** A required category: every channel stays on. */
  required: boolean;
  channels: { channel: NotifyChannel; enabled: boolean; chosen: boolean }[];
}

/** Body of `GET` and of the answer to `PUT /admin/notifications/preferences`. */
export interface AdminPreferencesJson {
  categories: AdminPreferenceCategoryJson[];
}

/** Largest body of `PUT /admin/notifications/preferences`. */
export const MAX_PREFERENCES_BODY_BYTES = 16 * 1024;

/** A notification as the admin JSON API and the SSE stream show it. */
export interface AdminNotificationJson {
  id: string;
  title: string;
  body: string;
  read: boolean;
  /** ISO 8601. */
  created_at: string;
  metadata: Record<string, unknown>;
}

/** Body of `GET /admin/notifications/inbox`. */
export interface AdminInboxJson {
  unread_count: number;
  /** Newest first. */
  notifications: AdminNotificationJson[];
  /** Pass as `cursor` for the next page; null on the last page. */
  next_cursor: string | null;
}

/**
 * `data:` of one SSE event (its `event:` is the same `type`, its `id:` the inbox cursor). Besides the
 * inbox events, `reset` says "the events after your Last-Event-ID are no longer kept: reload the list".
 */
export interface AdminStreamEventJson {
  type: Exclude<InboxEvent['type'], 'live'>;
  /** The new message, for `sent`. */
  message: AdminNotificationJson | null;
  /** The affected message, for `sent`, `read` and `deleted`. */
  message_id: string | null;
  unread_count: number;
  occurred_at: string;
}

/** Seconds a client told 429 (too many open streams) should wait before trying again. */
export const STREAM_RETRY_AFTER_SECONDS = 5;

/** Default interval of SSE heartbeat comments. */
export const DEFAULT_HEARTBEAT_MS = DEFAULT_SSE_HEARTBEAT_MS;

/** Every admin path starts with this (the route table adds the security headers under it). */
export const ADMIN_PATH_PREFIX = '/admin/';
const BASE = '/admin/notifications';
// Cursors are opaque and short; a longer one is garbage and is refused before reaching the inbox.
const MAX_CURSOR_LENGTH = 512;

interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  query: URLSearchParams;
}

/** Serves the admin endpoints of spec/notification-delivery.md on the notification HTTP port. */
export class AdminGateway {
  private readonly inbox: InboxServiceContract;
  private readonly auth: AdminAuth;
  private readonly logger: Logger;
  private readonly maxPageSize: number;
  private readonly heartbeatMs: number;
  private readonly shutdownSignal: AbortSignal | undefined;
  private readonly assets: ReadonlyMap<string, StaticAsset>;
  private readonly preferences: AdminPreferencesDeps | undefined;

  constructor(deps: AdminGatewayDeps) {
    if (!Number.isInteger(deps.maxPageSize) || deps.maxPageSize < 1) {
      throw new InvalidArgumentError('maxPageSize must be a positive integer', 'maxPageSize');
    }
    this.inbox = deps.inbox;
    this.auth = deps.auth;
    this.logger = deps.logger.child({ component: 'admin-gateway' });
    this.maxPageSize = deps.maxPageSize;
    this.heartbeatMs = deps.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
    this.shutdownSignal = deps.shutdownSignal;
    this.preferences = deps.preferences;
    this.assets = loadPageAssets(join(__dirname, 'page'), 'admin page');
  }

  /**
   * The gateway's routes, for the service's route table (the composition root adds them). Each
   * handler never rejects: a failure becomes the JSON error body (a generic 500, cause logged).
   * Unknown paths (404) and wrong methods (405 with `Allow`) are the table's answers.
   */
  routes(): Route[] {
    const get = ['GET'];
    const page = ['GET', 'HEAD'];
    const post = ['POST'];
    return [
      this.route(page, BASE, (ctx) => this.sendAsset(ctx, 'index.html')),
      ...PAGE_ASSET_FILES.map((name) =>
        this.route(page, `${BASE}/assets/${name}`, (ctx) => this.sendAsset(ctx, name)),
      ),
      this.route(get, `${BASE}/inbox`, async (ctx) => this.getInbox(ctx, await this.authenticate(ctx))),
      this.route(post, `${BASE}/read-all`, async (ctx) =>
        this.markAllRead(ctx, await this.authenticate(ctx)),
      ),
      this.route(post, `${BASE}/read/:id`, async (ctx, params) =>
        this.markRead(ctx, await this.authenticate(ctx), params.id!),
      ),
      this.route(get, `${BASE}/stream`, (ctx) => this.stream(ctx)),
      ...this.preferenceRoutes(),
    ];
  }

  private preferenceRoutes(): Route[] {
    const prefs = this.preferences;
    if (!prefs) return [];
    const path = `${BASE}/preferences`;
    return [
      this.route(['GET'], path, async (ctx) => {
        const userId = await this.authenticate(ctx);
        sendJson(ctx.res, 200, toPreferencesJson(await prefs.book.get(userId), prefs.categories));
      }),
      this.route(
        ['PUT'],
        path,
        async (ctx) => {
          // Authenticated before the body is read: an anonymous caller gets 401 on its headers.
          const userId = await this.authenticate(ctx);
          const body = await readBoundedBody(ctx.req, MAX_PREFERENCES_BODY_BYTES);
          if (body === BODY_TOO_LARGE) {
            sendJsonError(
              ctx.res,
              'resource_exhausted',
              `the body is larger than ${MAX_PREFERENCES_BODY_BYTES} bytes`,
              {
                status: 413,
                headers: { ...SECURITY_HEADERS, Connection: 'close' },
              },
            );
            return;
          }
          const choices = parsePreferenceChoices(body);
          sendJson(
            ctx.res,
            200,
            toPreferencesJson(await prefs.book.update(userId, choices), prefs.categories),
          );
        },
        true,
      ),
    ];
  }

  private route(
    methods: string[],
    path: string,
    serve: (ctx: RequestContext, params: RouteParams) => Promise<void> | void,
    readsBody = false,
  ): Route {
    return {
      methods,
      path,
      handler: async (req, res, { params, query }) => {
        const ctx: RequestContext = { req, res, query };
        // Bodies are read only by routes that take one: drain the rest so keep-alive stays usable.
        if (!readsBody) req.resume();
        try {
          await serve(ctx, params);
        } catch (err) {
          this.fail(ctx, err);
        }
      },
    };
  }

  private async authenticate(ctx: RequestContext): Promise<string> {
    const principal = await this.auth.authenticate(ctx.req.headers.authorization);
    return principal.userId;
  }

  private async getInbox(ctx: RequestContext, userId: string): Promise<void> {
    const limit = this.parseLimit(ctx.query);
    const cursor = singleParam(ctx.query, 'cursor');
    if (cursor !== undefined && (cursor.length === 0 || cursor.length > MAX_CURSOR_LENGTH)) {
      throw new InvalidArgumentError('cursor is malformed', 'cursor');
    }
    const page = await this.inbox.getInbox(userId, {
      pageSize: limit,
      ...(cursor !== undefined ? { pageToken: cursor } : {}),
    });
    const body: AdminInboxJson = {
      unread_count: page.unreadCount,
      notifications: page.messages.map(toNotificationJson),
      next_cursor: page.nextPageToken === '' ? null : page.nextPageToken,
    };
    sendJson(ctx.res, 200, body);
  }

  private async markRead(ctx: RequestContext, userId: string, messageId: string): Promise<void> {
    if (!isUuid(messageId)) throw new InvalidArgumentError('message_id must be a UUID', 'message_id');
    let unreadCount: number;
    try {
      ({ unreadCount } = await this.inbox.markRead(userId, messageId.toLowerCase()));
    } catch (err) {
      // One fixed body for "unknown" and "someone else's": nothing tells the two apart.
      if (isDomainError(err) && err.code === 'NOT_FOUND') {
        sendError(ctx.res, 'not_found', 'notification not found');
        return;
      }
      throw err;
    }
    sendJson(ctx.res, 200, { ok: true, unread_count: unreadCount });
  }

  private async markAllRead(ctx: RequestContext, userId: string): Promise<void> {
    const { updated } = await this.inbox.markAllRead(userId);
    sendJson(ctx.res, 200, { ok: true, updated, unread_count: 0 });
  }

  private async stream(ctx: RequestContext): Promise<void> {
    const { req, res } = ctx;
    const principal: AdminPrincipal = await this.auth.authenticate(req.headers.authorization);
    const { userId } = principal;
    const header = req.headers['last-event-id'];
    const after =
      (typeof header === 'string' && header !== '' ? header : undefined) ??
      ctx.query.get('last_event_id') ??
      undefined;
    if (
      after !== undefined &&
      (after.length === 0 || after.length > MAX_CURSOR_LENGTH || /[\r\n\0]/.test(after))
    ) {
      throw new InvalidArgumentError('Last-Event-ID is malformed', 'last_event_id');
    }

    // The stream's lifecycle (client gone, shutdown, token expiry, heartbeats, slow readers) is
    // shared/streams/sse-response.ts; its signal ends the inbox watch too.
    const sse = new SseResponse(res, {
      headers: SECURITY_HEADERS,
      heartbeatMs: this.heartbeatMs,
      expiresAt: principal.expiresAt,
      shutdownSignal: this.shutdownSignal,
    });
    if (sse.shuttingDown) return void sendError(res, 'unavailable', 'shutting down');

    // The cursor and the watcher caps are checked before the response starts: a refusal is a
    // plain status (400, 429), not an event in a stream the client would retry at once.
    let events: AsyncIterable<InboxEvent>;
    // `: connected` only once the watch is live, so a client that loads its list after seeing it
    // cannot miss an event sent in between.
    const onLive = (): void => void res.write(sseComment('connected'));
    try {
      events = this.inbox.watch(userId, { after, signal: sse.signal, onLive });
    } catch (err) {
      if (isDomainError(err) && err.code === 'RESOURCE_EXHAUSTED') {
        this.logger.info({ userId }, 'admin SSE refused: too many open streams');
        sendError(res, 'resource_exhausted', err.message, {
          'Retry-After': String(STREAM_RETRY_AFTER_SECONDS),
        });
        return;
      }
      throw err;
    }

    sse.start();
    try {
      for await (const event of events) {
        if (sse.signal.aborted) break;
        await sse.write(formatSseEvent(event));
      }
    } catch (err) {
      if (!sse.signal.aborted) this.endStreamAfterError(res, userId, err);
    } finally {
      sse.finish();
    }
  }

  private endStreamAfterError(res: ServerResponse, userId: string, err: unknown): void {
    if (isDomainError(err) && err.code === 'RESOURCE_EXHAUSTED') {
      // A slow reader: closing is the remedy, the browser reconnects with Last-Event-ID.
      this.logger.info({ userId }, 'admin SSE subscriber fell behind; stream closed for resume');
      return;
    }
    const { code, message, log } = describeRouteError(err);
    if (log) this.logger[log]({ err, userId }, 'admin SSE stream failed');
    res.write(sseFrame({ event: 'error', data: { error: { code, message } } }));
  }

  private parseLimit(query: URLSearchParams): number {
    return pageSizeParam(singleParam(query, 'limit'), { default: this.maxPageSize, max: this.maxPageSize });
  }

  private sendAsset(ctx: RequestContext, name: string): void {
    sendPageAsset(ctx.req, ctx.res, this.assets.get(name)!);
  }

  private fail(ctx: RequestContext, err: unknown): void {
    const { req, res } = ctx;
    if (res.headersSent) {
      this.logger.error({ err, method: req.method }, 'admin request failed after the response started');
      if (!res.writableEnded) res.end();
      return;
    }
    // The one mapping of a gateway route's error: a domain error its code, a database that does not
    // answer 503 (it was a 500 `internal`, as if the page had a bug), anything else `internal`.
    const described = describeRouteError(err);
    if (described.status === 401) {
      this.logger.debug(
        { reason: (err as Error).cause ?? described.message },
        'admin request not authenticated',
      );
      const sent = parseBearer(req.headers.authorization) !== undefined;
      sendError(res, described.code, described.message, {
        'WWW-Authenticate': sent ? 'Bearer realm="admin", error="invalid_token"' : 'Bearer realm="admin"',
      });
      return;
    }
    if (described.log === 'error')
      this.logger.error({ err, method: req.method, path: req.url?.split('?')[0] }, 'admin request failed');
    else if (described.log === 'warn') this.logger.warn({ err }, 'admin request failed on a dependency');
    sendError(res, described.code, described.message);
  }
}

/** The user's effective preferences, grouped by category in config order. */
export function toPreferencesJson(
  preferences: readonly Preference[],
  categories: readonly CategoryConfig[],
): AdminPreferencesJson {
  const byName = new Map<string, AdminPreferenceCategoryJson>();
  for (const c of categories) {
    byName.set(c.name, { name: c.name, description: c.description, required: c.required, channels: [] });
  }
  for (const p of preferences) {
    byName.get(p.category)?.channels.push({ channel: p.channel, enabled: p.enabled, chosen: p.chosen });
  }
  return { categories: [...byName.values()].filter((c) => c.channels.length > 0) };
}

/**
 * The body of `PUT /admin/notifications/preferences`: `{"preferences": [{"category", "channel",
 * "enabled"}]}`. Shape errors are INVALID_ARGUMENT naming the entry; the rules are the book's.
 */
export function parsePreferenceChoices(body: Buffer): PreferenceChoice[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw new InvalidArgumentError('the body is not valid JSON', 'body');
  }
  const list = (parsed as { preferences?: unknown } | null)?.preferences;
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || !Array.isArray(list)) {
    throw new InvalidArgumentError(
      'the body must be a JSON object {"preferences": [{"category", "channel", "enabled"}]}',
      'preferences',
    );
  }
  return list.map((entry: unknown, i) => {
    const e = entry as Record<string, unknown> | null;
    if (
      typeof e !== 'object' ||
      e === null ||
      typeof e.category !== 'string' ||
      typeof e.channel !== 'string' ||
      typeof e.enabled !== 'boolean'
    ) {
      throw new InvalidArgumentError(
        `preferences[${i}] must be {"category": string, "channel": string, "enabled": true or false}`,
        `preferences[${i}]`,
      );
    }
    return { category: e.category, channel: e.channel as NotifyChannel, enabled: e.enabled };
  });
}

/** The JSON shape of one inbox message on the admin API. */
export function toNotificationJson(message: InboxMessage): AdminNotificationJson {
  return {
    id: message.id,
    title: message.title,
    body: message.body,
    read: message.readAt !== null,
    created_at: message.createdAt.toISOString(),
    metadata: message.metadata,
  };
}

/**
 * One inbox event as an SSE frame: `id`, `event` and a single-line JSON `data`. The `live` event is
 * an `id:` line alone: it sets the browser's Last-Event-ID to the current cursor without an event.
 */
export function formatSseEvent(event: InboxEvent): string {
  if (event.type === 'live') return sseFrame({ id: event.cursor });
  const data: AdminStreamEventJson = {
    type: event.type,
    message: event.message ? toNotificationJson(event.message) : null,
    message_id: event.messageId ?? event.message?.id ?? null,
    unread_count: event.unreadCount,
    occurred_at: event.occurredAt.toISOString(),
  };
  return sseFrame({ id: event.cursor, event: event.type, data });
}

function singleParam(query: URLSearchParams, name: string): string | undefined {
  const values = query.getAll(name);
  if (values.length > 1) throw new InvalidArgumentError(`${name} must be given once`, name);
  return values[0];
}
