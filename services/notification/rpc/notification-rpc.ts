/**
 * The NotificationService RPCs (gRPC and Connect): translate wire messages to the email channel and
 * the delivery pipeline and back. No business rules here: validation lives in the Mailable and the
 * pipeline, scoping by caller in the pipeline. SendSms goes through the SMS channel's checks,
 * SendPush and SendPushBatch through the push channel's, then the pipeline.
 */
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import {
  AttemptOutcome,
  DeliveryFailure as WireFailure,
  DeliveryStatus as WireStatus,
  DeliveryEventType as WireEventType,
  type AddSuppressionRequest,
  type DeliverySchema,
  type GetDeliveryRequest,
  type ListSuppressionsRequest,
  type RemoveSuppressionRequest,
  type SuppressionSchema,
  SuppressionReason as WireReason,
  type ListDeliveriesRequest,
  type NotificationService,
  type PushMessage,
  PushPriority as WirePushPriority,
  ReceiptEffect as WireReceiptEffect,
  type SendEmailRequest,
  type SendSmsRequest,
  type SendPushBatchRequest,
  type SendPushRequest,
  type WatchDeliveriesRequest,
  type WatchDeliveriesResponseSchema,
} from '../../../shared/gen/svc/notification/v1/notification_pb';
import { FailedPreconditionError, InvalidArgumentError } from '../../../shared/errors';
import { callerKey } from '../../../shared/rpc/context';
import type { EmailSender } from '../channels/email/email-sender';
import type { SmsSender } from '../channels/sms/sms-sender';
import type { PushPayload, PushSender } from '../channels/push';
import { DELIVERY_CHANNEL_WIRE } from './channel-wire';
import type {
  Channel,
  DeliveryEventFilter,
  DeliveryFilter,
  DeliveryWatchFrame,
  DeliveryWatchHub,
  DeliveryPipeline,
  DeliveryStatus,
  DeliveryView,
  FailureKind,
  OutcomeClass,
  SuppressionReason,
  SuppressionView,
  Suppressions,
  ReceiptEffect,
} from '../delivery';

const CHANNEL_TO_WIRE = DELIVERY_CHANNEL_WIRE.toWire;

const STATUS_TO_WIRE: Record<DeliveryStatus, WireStatus> = {
  pending: WireStatus.PENDING,
  retrying: WireStatus.RETRYING,
  sent: WireStatus.SENT,
  delivered: WireStatus.DELIVERED,
  undelivered: WireStatus.UNDELIVERED,
  failed: WireStatus.FAILED,
};

const OUTCOME_TO_WIRE: Record<OutcomeClass, AttemptOutcome> = {
  sent: AttemptOutcome.SENT,
  retryable: AttemptOutcome.RETRYABLE,
  rate_limited: AttemptOutcome.RATE_LIMITED,
  permanent: AttemptOutcome.PERMANENT,
  recipient_failure: AttemptOutcome.RECIPIENT_FAILURE,
};

const FAILURE_TO_WIRE: Record<FailureKind, WireFailure> = {
  recipient_invalid: WireFailure.RECIPIENT_INVALID,
  recipient_unregistered: WireFailure.RECIPIENT_UNREGISTERED,
  recipient_unsubscribed: WireFailure.RECIPIENT_UNSUBSCRIBED,
  recipient_suppressed: WireFailure.RECIPIENT_SUPPRESSED,
  payload_rejected: WireFailure.PAYLOAD_REJECTED,
  provider_auth: WireFailure.PROVIDER_AUTH,
  provider_rejected: WireFailure.PROVIDER_REJECTED,
  retries_exhausted: WireFailure.RETRIES_EXHAUSTED,
  recipient_bounced: WireFailure.RECIPIENT_BOUNCED,
  spam_complaint: WireFailure.SPAM_COMPLAINT,
  provider_undelivered: WireFailure.PROVIDER_UNDELIVERED,
  worker_died: WireFailure.WORKER_DIED,
};

const EFFECT_TO_WIRE: Record<ReceiptEffect, WireReceiptEffect> = {
  applied: WireReceiptEffect.APPLIED,
  duplicate: WireReceiptEffect.DUPLICATE,
  ignored: WireReceiptEffect.IGNORED,
};

const REASON_TO_WIRE: Record<SuppressionReason, WireReason> = {
  hard_bounce: WireReason.HARD_BOUNCE,
  spam_complaint: WireReason.SPAM_COMPLAINT,
  unsubscribed: WireReason.UNSUBSCRIBED,
  stop_keyword: WireReason.STOP_KEYWORD,
  invalid_recipient: WireReason.INVALID_RECIPIENT,
  unregistered_token: WireReason.UNREGISTERED_TOKEN,
  manual: WireReason.MANUAL,
};

/** The reverse of a total domain-to-wire table, for filters. */
function reverse<D extends string, W extends number>(table: Record<D, W>): Map<W, D> {
  return new Map(Object.entries(table).map(([d, w]) => [w as W, d as D]));
}
const WIRE_TO_CHANNEL = DELIVERY_CHANNEL_WIRE.fromWire;
const WIRE_TO_STATUS = reverse(STATUS_TO_WIRE);
const WIRE_TO_FAILURE = reverse(FAILURE_TO_WIRE);
const WIRE_TO_REASON = reverse(REASON_TO_WIRE);

/** Domain status to wire status. */
export function toWireStatus(status: DeliveryStatus): WireStatus {
  return STATUS_TO_WIRE[status];
}

/**
 * Domain delivery record (already without content, recipient masked) to wire delivery; the receipt
 * history only `withReceipts` (GetDelivery), so listings stay small.
 */
export function toWireDelivery(
  d: DeliveryView,
  withReceipts = false,
): MessageInitShape<typeof DeliverySchema> {
  const time = (t: Date | null) => (t ? timestampFromDate(t) : undefined);
  return {
    id: d.id,
    channel: CHANNEL_TO_WIRE[d.channel],
    backend: d.backend,
    status: STATUS_TO_WIRE[d.status],
    attempts: d.attempts.length,
    lastError: d.lastError ?? '',
    providerReference: d.providerReference ?? '',
    idempotencyKey: d.idempotencyKey ?? '',
    recipient: d.maskedRecipient,
    createdAt: timestampFromDate(d.createdAt),
    updatedAt: timestampFromDate(d.updatedAt),
    nextAttemptAt: time(d.nextAttemptAt),
    sentAt: time(d.sentAt),
    deliveredAt: time(d.deliveredAt),
    failure: d.failure ? FAILURE_TO_WIRE[d.failure] : WireFailure.UNSPECIFIED,
    suppressedRecipients: d.suppressedRecipients,
    // The attempt that sent it names whom the provider refused (only a sent attempt has them).
    refusedRecipients: d.attempts.findLast((a) => a.outcome === 'sent')?.refusedRecipients ?? [],
    attemptLog: d.attempts.map((a) => ({
      // Attempts recorded before routing existed went through the record's backend.
      backend: a.backend ?? d.backend,
      startedAt: timestampFromDate(a.startedAt),
      outcome: OUTCOME_TO_WIRE[a.outcome],
      error: a.error ?? '',
      providerReference: a.providerReference ?? '',
      durationMs: BigInt(Math.round(a.durationMs)),
      refusedRecipients: a.refusedRecipients ?? [],
    })),
    receipts: withReceipts
      ? d.receipts.map((r) => ({
          eventId: r.eventId,
          event: r.event,
          status: r.status ? STATUS_TO_WIRE[r.status] : WireStatus.UNSPECIFIED,
          failure: r.failure ? FAILURE_TO_WIRE[r.failure] : WireFailure.UNSPECIFIED,
          providerCode: r.providerCode ?? '',
          occurredAt: time(r.occurredAt ?? null),
          receivedAt: timestampFromDate(r.receivedAt),
          effect: EFFECT_TO_WIRE[r.effect],
        }))
      : [],
  };
}

/** Domain suppression entry (recipient masked) to wire suppression. */
export function toWireSuppression(s: SuppressionView): MessageInitShape<typeof SuppressionSchema> {
  return {
    id: s.id,
    channel: CHANNEL_TO_WIRE[s.channel],
    recipient: s.maskedRecipient,
    reason: REASON_TO_WIRE[s.reason],
    source: s.source,
    createdAt: timestampFromDate(s.createdAt),
  };
}

/** A watch frame (domain) to a WatchDeliveries frame (wire). */
export function toWireWatchFrame(
  frame: DeliveryWatchFrame,
): MessageInitShape<typeof WatchDeliveriesResponseSchema> {
  if (frame.type !== 'change') {
    return {
      cursor: frame.cursor,
      type: frame.type === 'live' ? WireEventType.LIVE : WireEventType.RESET,
      occurredAt: timestampFromDate(frame.occurredAt),
    };
  }
  const e = frame.event;
  return {
    cursor: frame.cursor,
    type: WireEventType.CHANGE,
    deliveryId: e.deliveryId,
    channel: CHANNEL_TO_WIRE[e.channel],
    backend: e.backend,
    status: STATUS_TO_WIRE[e.status],
    failure: e.failure ? FAILURE_TO_WIRE[e.failure] : WireFailure.UNSPECIFIED,
    reason: e.reason ?? '',
    providerReference: e.providerReference ?? '',
    occurredAt: timestampFromDate(e.occurredAt),
  };
}

/** Most values one WatchDeliveries filter list may hold (each list is matched on every event). */
export const MAX_WATCH_FILTER_VALUES = 64;

function boundedList<T>(values: readonly T[], field: string): readonly T[] {
  if (values.length > MAX_WATCH_FILTER_VALUES) {
    throw new InvalidArgumentError(`${field}: at most ${MAX_WATCH_FILTER_VALUES} values`, field);
  }
  return values;
}

/** A repeated wire enum filter: unspecified or unknown values are bad input naming the field. */
function enumListFilter<D>(values: readonly number[], known: ReadonlyMap<number, D>, field: string): D[] {
  return boundedList(values, field).map((v) => {
    const mapped = v === 0 ? undefined : known.get(v);
    if (mapped === undefined) throw new InvalidArgumentError(`${field}: unknown value ${v}`, field);
    return mapped;
  });
}

/** A required wire channel: unspecified or unknown is bad input naming `channel`. */
function requiredChannel(value: number): Channel {
  const channel = enumFilter(value, WIRE_TO_CHANNEL, 'channel');
  if (!channel) throw new InvalidArgumentError('channel is required', 'channel');
  return channel;
}

/** A wire enum filter: unspecified means any; a value we do not know is bad input naming the field. */
function enumFilter<D>(value: number, known: ReadonlyMap<number, D>, field: string): D | undefined {
  if (value === 0) return undefined;
  const mapped = known.get(value);
  if (mapped === undefined) throw new InvalidArgumentError(`${field}: unknown value ${value}`, field);
  return mapped;
}

/** A wire PushMessage as the push channel takes it (absent fields left out). */
function fromWirePush(m: PushMessage | undefined): PushPayload {
  const p: PushPayload = { deviceToken: m?.deviceToken ?? '' };
  if (!m) return p;
  if (m.title) p.title = m.title;
  if (m.body) p.body = m.body;
  if (Object.keys(m.data).length > 0) p.data = m.data;
  if (m.collapseKey) p.collapseKey = m.collapseKey;
  if (m.ttlSeconds !== undefined) p.ttlSeconds = m.ttlSeconds;
  if (m.priority === WirePushPriority.HIGH) p.priority = 'high';
  else if (m.priority === WirePushPriority.NORMAL) p.priority = 'normal';
  else if (m.priority !== WirePushPriority.UNSPECIFIED) {
    throw new InvalidArgumentError(`message.priority: unknown value ${m.priority}`, 'message.priority');
  }
  return p;
}

/** NotificationService: email, SMS, push and the delivery records. */
export class NotificationRpc implements ServiceImpl<typeof NotificationService> {
  constructor(
    private readonly email: EmailSender,
    private readonly pipeline: DeliveryPipeline,
    private readonly sms: SmsSender,
    private readonly push?: PushSender,
    private readonly suppressions?: Suppressions,
    private readonly deliveryWatch?: DeliveryWatchHub,
  ) {}

  async sendSms(req: SendSmsRequest, ctx: HandlerContext) {
    const result = await this.sms.send(
      { to: req.to, body: req.body, backend: req.backend, idempotencyKey: req.idempotencyKey },
      ctx.values.get(callerKey),
    );
    return { deliveryId: result.delivery.id, status: STATUS_TO_WIRE[result.delivery.status] };
  }

  async sendPush(req: SendPushRequest, ctx: HandlerContext) {
    const delivery = await this.pushSender().send(
      fromWirePush(req.message),
      { backend: req.backend, idempotencyKey: req.idempotencyKey },
      ctx.values.get(callerKey),
    );
    return { deliveryId: delivery.id, status: STATUS_TO_WIRE[delivery.status] };
  }

  async sendPushBatch(req: SendPushBatchRequest, ctx: HandlerContext) {
    const deliveries = await this.pushSender().sendBatch(
      req.messages.map(fromWirePush),
      { backend: req.backend, idempotencyKey: req.idempotencyKey },
      ctx.values.get(callerKey),
    );
    return {
      results: deliveries.map((d, index) => ({
        index,
        deliveryId: d.id,
        status: STATUS_TO_WIRE[d.status],
      })),
    };
  }

  private pushSender(): PushSender {
    if (!this.push) throw new FailedPreconditionError('no push backend configured');
    return this.push;
  }

  async sendEmail(req: SendEmailRequest, ctx: HandlerContext) {
    const result = await this.email.send(
      {
        to: req.to,
        cc: req.cc,
        bcc: req.bcc,
        fromName: req.fromName,
        replyTo: req.replyTo,
        subject: req.subject,
        text: req.text,
        html: req.html,
        headers: req.headers,
        attachments: req.attachments.map((a) => ({
          filename: a.filename,
          contentType: a.contentType,
          content: a.content,
        })),
        backend: req.backend,
        idempotencyKey: req.idempotencyKey,
      },
      ctx.values.get(callerKey),
    );
    return {
      deliveryId: result.delivery.id,
      status: STATUS_TO_WIRE[result.delivery.status],
      messageId: result.messageId,
    };
  }

  async getDelivery(req: GetDeliveryRequest, ctx: HandlerContext) {
    // Scoped per caller: another caller's delivery is NOT_FOUND, like a missing one.
    const delivery = await this.pipeline.get(req.id, ctx.values.get(callerKey));
    return { delivery: toWireDelivery(delivery, true) };
  }

  async listDeliveries(req: ListDeliveriesRequest, ctx: HandlerContext) {
    const filter: DeliveryFilter = { scope: ctx.values.get(callerKey) };
    const channel = enumFilter(req.channel, WIRE_TO_CHANNEL, 'channel');
    const status = enumFilter(req.status, WIRE_TO_STATUS, 'status');
    if (channel) filter.channel = channel;
    if (status) filter.status = status;
    const failure = enumFilter(req.failure, WIRE_TO_FAILURE, 'failure');
    if (failure) filter.failure = failure;
    if (req.backend !== '') filter.backend = req.backend;
    const page = await this.pipeline.list(filter, req.pageToken, req.pageSize);
    return { deliveries: page.deliveries.map((d) => toWireDelivery(d)), nextPageToken: page.nextPageToken };
  }

  // --- Suppression list (AddSuppression, RemoveSuppression, ListSuppressions) ---
  // One list per channel for the whole service, not per caller: a recipient who opted out has opted
  // out of every caller's messages. The source of a manual entry names the caller (never its token).

  async addSuppression(req: AddSuppressionRequest, ctx: HandlerContext) {
    const channel = requiredChannel(req.channel);
    const reason = enumFilter(req.reason, WIRE_TO_REASON, 'reason') ?? 'manual';
    const { entry, created } = await this.suppressionList().addEntry({
      channel,
      recipient: req.recipient,
      reason,
      source: `api:${ctx.values.get(callerKey)}`,
    });
    return { suppression: toWireSuppression(entry), created };
  }

  async removeSuppression(req: RemoveSuppressionRequest, ctx: HandlerContext) {
    const channel = requiredChannel(req.channel);
    await this.suppressionList().removeByHand(channel, req.recipient, `api:${ctx.values.get(callerKey)}`);
    return {};
  }

  async listSuppressions(req: ListSuppressionsRequest) {
    const channel = enumFilter(req.channel, WIRE_TO_CHANNEL, 'channel');
    const page = await this.suppressionList().list(channel, req.pageToken, req.pageSize);
    return { suppressions: page.entries.map(toWireSuppression), nextPageToken: page.nextPageToken };
  }

  private suppressionList(): Suppressions {
    if (!this.suppressions) throw new FailedPreconditionError('the suppression list is not configured');
    return this.suppressions;
  }

  // --- WatchDeliveries: the caller's delivery changes, scoped like GetDelivery (delivery/watch-hub.ts).

  async *watchDeliveries(req: WatchDeliveriesRequest, ctx: HandlerContext) {
    if (!this.deliveryWatch) throw new FailedPreconditionError('delivery watching is not configured');
    const filter: DeliveryEventFilter = {
      channels: enumListFilter(req.channels, WIRE_TO_CHANNEL, 'channels'),
      backends: boundedList(req.backends, 'backends'),
      statuses: enumListFilter(req.statuses, WIRE_TO_STATUS, 'statuses'),
    };
    const frames = this.deliveryWatch.watch(ctx.values.get(callerKey), {
      after: req.afterCursor || undefined,
      filter,
      signal: ctx.signal,
    });
    for await (const frame of frames) yield toWireWatchFrame(frame);
    // The watch ends quietly when its signal aborts; tell the client why (cancelled, deadline, or
    // UNAVAILABLE at shutdown, after which it resumes elsewhere with its last cursor).
    if (ctx.signal.aborted) throw ctx.signal.reason;
  }
}
