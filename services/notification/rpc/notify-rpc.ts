/**
 * The NotifyService RPCs (gRPC and Connect): translate wire messages to the Notifier (../notify) and
 * back. No business rules here: validation, idempotency and the fan-out live in the domain.
 */
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampDate, timestampFromDate, type Duration, type Timestamp } from '@bufbuild/protobuf/wkt';
import { InvalidArgumentError } from '../../../shared/errors';
import { callerKey } from '../../../shared/rpc/context';
import {
  type CancelNotificationRequest,
  type ChannelOverride as WireOverride,
  type GetNotificationRequest,
  HoldReason as WireHold,
  type ListNotificationsRequest,
  NotificationStatus as WireStatus,
  type NotificationSchema,
  type NotifyRequest,
  NotifyPriority as WirePriority,
  type NotifyService,
  SkipReason as WireSkip,
} from '../../../shared/gen/svc/notification/v1/notify_pb';
import {
  TemplateChannel as WireChannel,
  type TemplateContent as WireContent,
} from '../../../shared/gen/svc/notification/v1/templates_pb';
import type { Notifier, NotificationView } from '../notify/notifier';
import type {
  ChannelOverride,
  HoldReason,
  NotificationStatus,
  NotifyPriority,
  SkipReason,
} from '../notify/types';
import type { TemplateContent } from '../templates/types';
import { toWireStatus } from './notification-rpc';
import { TEMPLATE_CHANNEL_WIRE } from './channel-wire';

const CHANNEL_TO_WIRE = TEMPLATE_CHANNEL_WIRE.toWire;
const WIRE_TO_CHANNEL = TEMPLATE_CHANNEL_WIRE.fromWire;

const STATUS_TO_WIRE: Record<NotificationStatus, WireStatus> = {
  accepted: WireStatus.ACCEPTED,
  fanning_out: WireStatus.FANNING_OUT,
  fanned_out: WireStatus.FANNED_OUT,
  scheduled: WireStatus.SCHEDULED,
  cancelled: WireStatus.CANCELLED,
};

const HOLD_TO_WIRE: Record<HoldReason, WireHold> = {
  quiet_hours: WireHold.QUIET_HOURS,
  cap_deferred: WireHold.CAP_DEFERRED,
};

const PRIORITY_TO_WIRE: Record<NotifyPriority, WirePriority> = {
  normal: WirePriority.NORMAL,
  critical: WirePriority.CRITICAL,
};

const SKIP_TO_WIRE: Record<SkipReason, WireSkip> = {
  preference_off: WireSkip.PREFERENCE_OFF,
  no_contact_point: WireSkip.NO_CONTACT_POINT,
  no_template: WireSkip.NO_TEMPLATE,
  overridden: WireSkip.OVERRIDDEN,
  channel_not_configured: WireSkip.CHANNEL_NOT_CONFIGURED,
  suppressed: WireSkip.SUPPRESSED,
  render_failed: WireSkip.RENDER_FAILED,
  throttled: WireSkip.THROTTLED,
  cancelled: WireSkip.CANCELLED,
};

/** Largest `delay` the wire may carry before the domain's own bound (keeps the arithmetic exact). */
const MAX_WIRE_SECONDS = 10n ** 11n;

function fromWireSendAt(t: Timestamp | undefined): Date | null {
  if (!t) return null;
  if (t.seconds > MAX_WIRE_SECONDS || t.seconds < -MAX_WIRE_SECONDS || t.nanos < 0 || t.nanos > 999_999_999) {
    throw new InvalidArgumentError('send_at is not a valid time', 'send_at');
  }
  return timestampDate(t);
}

function fromWireDelay(d: Duration | undefined): number | null {
  if (!d) return null;
  if (d.seconds < 0n || d.nanos < 0) throw new InvalidArgumentError('delay must not be negative', 'delay');
  if (d.seconds > MAX_WIRE_SECONDS || d.nanos > 999_999_999) {
    throw new InvalidArgumentError('delay is too long', 'delay');
  }
  return Number(d.seconds) * 1000 + Math.floor(d.nanos / 1_000_000);
}

function fromWirePriority(value: WirePriority): NotifyPriority {
  switch (value) {
    case WirePriority.UNSPECIFIED:
    case WirePriority.NORMAL:
      return 'normal';
    case WirePriority.CRITICAL:
      return 'critical';
    default:
      throw new InvalidArgumentError(`priority: unknown value ${value as number}`, 'priority');
  }
}

/** The parts a wire TemplateContent sets (empty strings are unset). */
function fromWireContent(c: WireContent | undefined): TemplateContent | undefined {
  if (!c) return undefined;
  const content: TemplateContent = {};
  for (const part of ['title', 'body', 'subject', 'html', 'text'] as const)
    if (c[part]) content[part] = c[part];
  if (c.data && Object.keys(c.data).length > 0) content.data = c.data;
  return content;
}

function fromWireOverride(o: WireOverride, i: number): ChannelOverride {
  const channel = WIRE_TO_CHANNEL.get(o.channel);
  if (!channel) {
    const field = `overrides[${i}].channel`;
    throw new InvalidArgumentError(
      o.channel === WireChannel.UNSPECIFIED ? `${field} is required` : `${field}: unknown value ${o.channel}`,
      field,
    );
  }
  const content = fromWireContent(o.content);
  return { channel, skip: o.skip, backend: o.backend, ...(content ? { content } : {}) };
}

/** A domain notification as the wire message. */
export function toWireNotification(n: NotificationView): MessageInitShape<typeof NotificationSchema> {
  return {
    id: n.id,
    userId: n.userId ?? '',
    topic: n.topic ?? '',
    category: n.category,
    priority: PRIORITY_TO_WIRE[n.priority],
    idempotencyKey: n.idempotencyKey ?? '',
    status: STATUS_TO_WIRE[n.status],
    channels: n.channels.map((l) => ({
      channel: CHANNEL_TO_WIRE[l.channel],
      contact: l.contact,
      messageId: l.messageId ?? '',
      deliveryStatus: l.deliveryStatus ? toWireStatus(l.deliveryStatus) : undefined,
      skipped: l.skipped ? SKIP_TO_WIRE[l.skipped] : WireSkip.UNSPECIFIED,
      error: l.error ?? '',
      locale: l.locale,
      heldUntil: l.heldUntil ? timestampFromDate(l.heldUntil) : undefined,
      holdReason: l.holdReason ? HOLD_TO_WIRE[l.holdReason] : WireHold.UNSPECIFIED,
      throttledBy: l.throttledBy ?? '',
      digestId: l.digestId ?? '',
    })),
    progress:
      n.topic !== null && n.parentId === null
        ? { usersTotal: BigInt(n.usersTotal), usersDone: BigInt(n.usersDone) }
        : undefined,
    parentId: n.parentId ?? '',
    createdAt: timestampFromDate(n.createdAt),
    updatedAt: timestampFromDate(n.updatedAt),
    sendAt: n.sendAt ? timestampFromDate(n.sendAt) : undefined,
  };
}

/** NotifyService: Notify, GetNotification, ListNotifications, CancelNotification. */
export class NotifyRpc implements ServiceImpl<typeof NotifyService> {
  constructor(private readonly notifier: Notifier) {}

  async notify(req: NotifyRequest, ctx: HandlerContext) {
    const { notification, created } = await this.notifier.notify(
      {
        userId: req.userId,
        topic: req.topic,
        category: req.category,
        data: req.data ?? {},
        overrides: req.overrides.map(fromWireOverride),
        priority: fromWirePriority(req.priority),
        idempotencyKey: req.idempotencyKey,
        sendAt: fromWireSendAt(req.sendAt),
        delayMs: fromWireDelay(req.delay),
      },
      ctx.values.get(callerKey),
    );
    return { notification: toWireNotification(notification), created };
  }

  async getNotification(req: GetNotificationRequest, ctx: HandlerContext) {
    return { notification: toWireNotification(await this.notifier.get(req.id, ctx.values.get(callerKey))) };
  }

  async listNotifications(req: ListNotificationsRequest, ctx: HandlerContext) {
    const page = await this.notifier.list(req.userId, ctx.values.get(callerKey), req.pageSize, req.pageToken);
    return {
      notifications: page.notifications.map(toWireNotification),
      nextPageToken: page.nextPageToken,
    };
  }

  async cancelNotification(req: CancelNotificationRequest, ctx: HandlerContext) {
    const { notification, cancelled } = await this.notifier.cancel(
      { id: req.id, idempotencyKey: req.idempotencyKey },
      ctx.values.get(callerKey),
    );
    return { notification: toWireNotification(notification), cancelled };
  }
}
