/**
 * The console's Activity section (issue 29): deliveries and notifications newest first under the
 * operator's filters, one message's timeline, and a live feed of delivery changes. Reads the same
 * domain objects the RPCs use (DeliveryPipeline, Notifier, DeliveryWatchHub); see the README's
 * "Activity" heading for routes and shapes.
 */
import {
  InvalidArgumentError,
  isDomainError,
  NotFoundError,
  UnavailableError,
} from '../../../../../shared/errors';
import type { Route } from '../../../../../shared/http/routes';
import { pageSizeParam } from '../../../../../shared/storage/page-size';
import { sseComment, sseFrame } from '../../../../../shared/streams/sse';
import { SseResponse } from '../../../../../shared/streams/sse-response';
import {
  CHANNELS,
  DELIVERY_STATUSES,
  normaliseRecipient,
  type Channel,
  type DeliveryFilter,
  type DeliveryStatus,
  type DeliveryView,
} from '../../../delivery';
import type { NotificationFilter } from '../../../notify/store';
import { describeRouteError, SECURITY_HEADERS, sendError, sendJson } from '../../http';
import { type ConsoleApi, type ConsoleContext, type ConsoleSection, singleParam } from '../console-gateway';
import type { ConsoleSectionDeps } from './index';
import { byTime, deliveryTimeline, notificationEntries, notificationSummary } from './timeline';
import { checkText } from '../../../../../shared/text/check';

/** Default page of the activity lists (capped by `inbox.max_page_size`). */
export const DEFAULT_ACTIVITY_PAGE = 50;
/** Longest user id, category or backend a filter takes, in code points. */
export const MAX_FILTER_TEXT = 256;
/** Longest recipient a filter takes (an email address, a number, a device token). */
export const MAX_RECIPIENT_FILTER = 4096;
/** Interval of the live feed's heartbeat comments. */
export const ACTIVITY_HEARTBEAT_MS = 15_000;
/** Retry-After of a refused live feed (too many open watches). */
export const ACTIVITY_RETRY_AFTER_SECONDS = 5;

const NOTIFICATION_STATUSES = ['accepted', 'fanning_out', 'fanned_out', 'scheduled', 'cancelled'] as const;

/** Options of the section (tests shorten the heartbeat). */
export interface ActivityOptions {
  heartbeatMs?: number;
}

/** The Activity section. */
export function activitySection(deps: ConsoleSectionDeps, options: ActivityOptions = {}): ConsoleSection {
  const heartbeatMs = options.heartbeatMs ?? ACTIVITY_HEARTBEAT_MS;
  const limits = { default: Math.min(DEFAULT_ACTIVITY_PAGE, deps.maxPageSize), max: deps.maxPageSize };

  async function listDeliveries(ctx: ConsoleContext): Promise<void> {
    const filter = deliveryFilter(ctx.query);
    const limit = pageSizeParam(singleParam(ctx.query, 'limit'), limits);
    const cursor = singleParam(ctx.query, 'cursor') ?? '';
    const page = await withCursor(() => deps.deliveries.list(filter, cursor, limit));
    sendJson(ctx.res, 200, {
      items: page.deliveries.map(deliveryRow),
      next_cursor: page.nextPageToken || null,
    });
  }

  async function listNotifications(ctx: ConsoleContext): Promise<void> {
    const filter = notificationFilter(ctx.query);
    const limit = pageSizeParam(singleParam(ctx.query, 'limit'), limits);
    const cursor = singleParam(ctx.query, 'cursor') ?? '';
    const page = await withCursor(() => deps.notifier.listAll(filter, limit, cursor));
    sendJson(ctx.res, 200, {
      items: page.notifications.map((n) => ({
        ...notificationSummary(n),
        delivery_ids: n.channels.flatMap((l) => (l.channel !== 'inbox' && l.messageId ? [l.messageId] : [])),
      })),
      next_cursor: page.nextPageToken || null,
    });
  }

  async function timeline(ctx: ConsoleContext): Promise<void> {
    const delivery = await deps.deliveries.get(ctx.params.id ?? '');
    const notification = await deps.notifier.findByDelivery(delivery.id);
    sendJson(ctx.res, 200, {
      delivery: deliveryRow(delivery),
      timeline: deliveryTimeline(delivery, notification),
      notification: notification ? notificationSummary(notification) : null,
    });
  }

  async function notification(ctx: ConsoleContext): Promise<void> {
    const n = await deps.notifier.getAny(ctx.params.id ?? '');
    const deliveries = [];
    for (const line of n.channels) {
      if (line.channel === 'inbox' || !line.messageId) continue;
      try {
        const d = await deps.deliveries.get(line.messageId);
        deliveries.push({ delivery: deliveryRow(d), timeline: deliveryTimeline(d, n) });
      } catch (err) {
        // The retention deleted it: the line still shows, without a timeline.
        if (!(err instanceof NotFoundError)) throw err;
      }
    }
    sendJson(ctx.res, 200, {
      notification: notificationSummary(n),
      timeline: byTime(notificationEntries(n)),
      deliveries,
    });
  }

  async function stream(ctx: ConsoleContext): Promise<void> {
    const { res, operator } = ctx;
    // Only a client that asks for an event stream gets one (ConsoleKit.stream does); anything else
    // (a tool reading the whole body) gets a plain answer instead of a response that never ends.
    if (!/\btext\/event-stream\b/.test(ctx.req.headers.accept ?? '')) {
      throw new InvalidArgumentError(
        'this route is an event stream: send Accept: text/event-stream',
        'accept',
      );
    }
    const filter = deliveryFilter(ctx.query);
    const sse = new SseResponse(ctx.res, {
      headers: SECURITY_HEADERS,
      heartbeatMs,
      expiresAt: operator.expiresAt,
      shutdownSignal: deps.shutdownSignal,
    });
    if (sse.shuttingDown) throw new UnavailableError('the server is shutting down');
    const { signal } = sse;
    // The caps are checked here, before the response starts: a refusal is a plain 429.
    let frames;
    try {
      frames = deps.deliveryWatch.watchEveryScope(operator.userId, {
        filter: {
          ...(filter.channel ? { channels: [filter.channel] } : {}),
          ...(filter.backend ? { backends: [filter.backend] } : {}),
          ...(filter.status ? { statuses: [filter.status] } : {}),
        },
        signal,
      });
    } catch (err) {
      if (isDomainError(err) && err.code === 'RESOURCE_EXHAUSTED') {
        sendError(res, 'resource_exhausted', err.message, {
          'Retry-After': String(ACTIVITY_RETRY_AFTER_SECONDS),
        });
        return;
      }
      throw err;
    }
    sse.start();
    // Status is matched on the event by the hub; the row shows the record as it is now.
    const { status: _status, ...rowFilter } = filter;
    void _status;
    try {
      for await (const frame of frames) {
        if (signal.aborted) break;
        if (frame.type === 'live') {
          res.write(sseComment('connected'));
          continue;
        }
        if (frame.type !== 'change') continue;
        const page = await deps.deliveries.list({ ...rowFilter, id: frame.event.deliveryId }, '', 1);
        const row = page.deliveries[0];
        if (!row || signal.aborted) continue;
        const data = {
          change: frame.event.status === 'pending' ? 'created' : 'status',
          event_status: frame.event.status,
          delivery: deliveryRow(row),
        };
        await sse.write(sseFrame({ event: 'delivery', data }));
      }
    } catch (err) {
      if (!signal.aborted && !(isDomainError(err) && err.code === 'RESOURCE_EXHAUSTED')) {
        const { code, message, log } = describeRouteError(err);
        if (log) deps.logger[log]({ err }, 'console activity stream failed');
        res.write(sseFrame({ event: 'error', data: { error: { code, message } } }));
      }
    } finally {
      sse.finish();
    }
  }

  return {
    name: 'activity',
    routes(api: ConsoleApi): Route[] {
      return [
        api.route(['GET'], 'activity/deliveries', listDeliveries),
        api.route(['GET'], 'activity/deliveries/:id/timeline', timeline),
        api.route(['GET'], 'activity/notifications', listNotifications),
        api.route(['GET'], 'activity/notifications/:id', notification),
        api.route(['GET'], 'activity/stream', stream),
      ];
    },
  };
}

/** One row of the delivery list (and of the live feed): the recipient masked, no content. */
export function deliveryRow(d: DeliveryView): Record<string, unknown> {
  return {
    id: d.id,
    channel: d.channel,
    status: d.status,
    backend: d.backend,
    recipient: d.maskedRecipient,
    user_id: d.userId ?? null,
    category: d.category ?? null,
    attempts: d.attempts.length,
    failure: d.failure,
    last_error: d.lastError,
    created_at: d.createdAt.toISOString(),
    updated_at: d.updatedAt.toISOString(),
    sent_at: d.sentAt?.toISOString() ?? null,
    delivered_at: d.deliveredAt?.toISOString() ?? null,
  };
}

/** A cursor the domain refuses is the route's `cursor` parameter. */
async function withCursor<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof InvalidArgumentError && err.field === 'page_token') {
      throw new InvalidArgumentError('cursor is not a valid cursor of this listing and filter', 'cursor');
    }
    throw err;
  }
}

function text(query: URLSearchParams, name: string, max = MAX_FILTER_TEXT): string | undefined {
  const value = singleParam(query, name);
  if (value === undefined || value === '') return undefined;
  return checkText(value, name, { max });
}

function oneOf<T extends string>(query: URLSearchParams, name: string, allowed: readonly T[]): T | undefined {
  const value = singleParam(query, name);
  if (value === undefined || value === '') return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new InvalidArgumentError(`${name} must be one of ${allowed.join(', ')}`, name);
  }
  return value as T;
}

/**
 * The channel a recipient is written for, when the filter names none: an address with `@` is an
 * email, a number (digits, `+`, spaces, dashes, dots, parentheses) an SMS number, anything else a
 * device token.
 */
export function recipientChannel(recipient: string): Channel {
  if (recipient.includes('@')) return 'email';
  if (/^\+?[0-9\s().-]+$/.test(recipient.trim())) return 'sms';
  return 'push';
}

/** The delivery listing's filter from the query (bad values: InvalidArgumentError on the parameter). */
export function deliveryFilter(query: URLSearchParams): DeliveryFilter {
  const channel = oneOf<Channel>(query, 'channel', CHANNELS);
  const status = oneOf<DeliveryStatus>(query, 'status', DELIVERY_STATUSES);
  const backend = text(query, 'backend');
  const category = text(query, 'category');
  const userId = text(query, 'user');
  const recipient = text(query, 'recipient', MAX_RECIPIENT_FILTER);
  const filter: DeliveryFilter = {};
  if (channel) filter.channel = channel;
  if (status) filter.status = status;
  if (backend) filter.backend = backend;
  if (category) filter.category = category;
  if (userId) filter.userId = userId;
  if (recipient !== undefined) {
    filter.recipientKey = normaliseRecipient(channel ?? recipientChannel(recipient), recipient, 'recipient');
  }
  return filter;
}

function notificationFilter(query: URLSearchParams): NotificationFilter {
  const filter: NotificationFilter = {};
  const userId = text(query, 'user');
  const category = text(query, 'category');
  const status = oneOf(query, 'status', NOTIFICATION_STATUSES);
  if (userId) filter.userId = userId;
  if (category) filter.category = category;
  if (status) filter.status = status;
  return filter;
}
