/**
 * The http_api mailers' event webhook (SendGrid's protocol): `POST /webhooks/email/{backend}/events`
 * with a JSON array of events (`sg_event_id`, `event`, `sg_message_id`, `email`, `timestamp`, and our
 * `delivery_id`, which the mailer sends as a custom argument and the provider echoes in each event).
 *
 * Verified by the ECDSA P-256 signature in `X-Twilio-Email-Event-Webhook-Signature` (base64 DER) over
 * the `X-Twilio-Email-Event-Webhook-Timestamp` header followed by the raw body, against the backend's
 * `event_webhook_public_key`. A timestamp more than `webhooks.max_age_seconds` from now is refused, so
 * a captured batch cannot be replayed later; within the window a replayed event is a duplicate (same
 * `sg_event_id`) and moves nothing, and an event that suppresses an address (bounce, complaint,
 * unsubscribe) is taken once (its id is remembered like a Twilio callback's), so a replay cannot put
 * back a suppression lifted since.
 *
 * Each event of a batch is applied on its own: one that cannot be applied is counted `failed` and the
 * others still are. The answer is 200 unless an event failed for a reason that may pass (the store
 * could not be reached): then 503, and the provider sends the batch again.
 */
import { createPublicKey, createVerify, type KeyObject } from 'node:crypto';

import { sendJson } from '../../../../shared/http/json';
import { sendJsonError } from '../../../../shared/http/errors';
import type { Route } from '../../../../shared/http/routes';
import type { FailureKind, IncomingReceipt } from '../../delivery';
import type {
  ReceiptRecorder,
  ReceiptSource,
  RecordOutcome,
  VerifiedReceipt,
} from '../../delivery/receipt-recorder';
import type { SuppressionReason } from '../../delivery/suppression';
import {
  EMAIL_EVENTS_WEBHOOK_PATH,
  noSuchWebhook,
  readWebhookBody,
  refuseSignature,
} from '../../delivery/webhook-http';
import type { WebhooksConfig } from '../../delivery/webhooks-config';
import type { NamedMailerConfig } from './config';
import { type Clock, dateReader } from '../../../../shared/runtime/clock';

/** The header carrying the signature. */
export const EVENT_WEBHOOK_SIGNATURE_HEADER = 'x-twilio-email-event-webhook-signature';
/** The header carrying the signed timestamp (Unix seconds). */
export const EVENT_WEBHOOK_TIMESTAMP_HEADER = 'x-twilio-email-event-webhook-timestamp';

/** Most events of one batch read; the rest are ignored (SendGrid batches far fewer). */
export const MAX_EVENTS_PER_BATCH = 10_000;

/** The key object of a configured key (base64 DER SPKI as SendGrid shows it, or PEM). */
export function eventWebhookKey(publicKey: string): KeyObject {
  return publicKey.includes('-----BEGIN')
    ? createPublicKey(publicKey)
    : createPublicKey({ key: Buffer.from(publicKey.trim(), 'base64'), format: 'der', type: 'spki' });
}

/** True when `signature` (base64 DER ECDSA) signs `timestamp` followed by `body` under `key`. */
export function verifyEventWebhookSignature(
  key: KeyObject,
  timestamp: string,
  body: Buffer,
  signature: string,
): boolean {
  try {
    return createVerify('sha256')
      .update(timestamp, 'utf8')
      .update(body)
      .verify(key, Buffer.from(signature, 'base64'));
  } catch {
    return false; // a signature that is not DER at all
  }
}

/** How each event moves the record, what it reports and whether it suppresses the address. */
const EVENTS: Readonly<
  Record<
    string,
    { status: IncomingReceipt['status']; failure: FailureKind | null; suppress?: SuppressionReason }
  >
> = {
  processed: { status: 'sent', failure: null },
  deferred: { status: null, failure: null },
  delivered: { status: 'delivered', failure: null },
  bounce: { status: 'undelivered', failure: 'recipient_bounced', suppress: 'hard_bounce' },
  dropped: { status: 'undelivered', failure: 'provider_undelivered' },
  // A complaint or an unsubscribe means the message reached the mailbox.
  spamreport: { status: 'delivered', failure: 'spam_complaint', suppress: 'spam_complaint' },
  unsubscribe: { status: 'delivered', failure: 'recipient_unsubscribed', suppress: 'unsubscribed' },
  group_unsubscribe: { status: 'delivered', failure: 'recipient_unsubscribed', suppress: 'unsubscribed' },
  open: { status: 'delivered', failure: null },
  click: { status: 'delivered', failure: null },
};

/**
 * SendGrid `dropped` names its reason in `reason`: most are the recipient's (an address that bounced,
 * unsubscribed or complained before, an invalid one), which must not count against the provider (the
 * receipts SLO); anything else (spam content, an invalid header, ...) stays `provider_undelivered`.
 */
const DROPPED_REASONS: readonly { match: RegExp; failure: FailureKind }[] = [
  { match: /^bounced address/i, failure: 'recipient_bounced' },
  { match: /^(unsubscribed|spam reporting) address/i, failure: 'recipient_unsubscribed' },
  { match: /^invalid$/i, failure: 'recipient_invalid' },
];

function str(value: unknown, max = 128): string | undefined {
  return typeof value === 'string' && value !== ''
    ? value.replace(/[^\x20-\x7e]/g, '').slice(0, max)
    : undefined;
}

/**
 * The receipt one event stands for; undefined for something that is not an event object. A bounce of
 * type `blocked` (the receiving server refused for now: reputation, rate) suppresses nobody.
 */
export function parseEvent(value: unknown): VerifiedReceipt | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const e = value as Record<string, unknown>;
  const name = str(e.event, 32)?.toLowerCase();
  if (name === undefined) return undefined;
  const known = Object.hasOwn(EVENTS, name) ? EVENTS[name]! : undefined;
  const messageId = str(e.sg_message_id);
  const timestamp = typeof e.timestamp === 'number' && Number.isFinite(e.timestamp) ? e.timestamp : undefined;
  // SendGrid gives every event an id; without one, the message, event and time stand in for it.
  const eventId = str(e.sg_event_id) ?? `${messageId ?? ''}:${name}:${timestamp ?? ''}`;
  const blocked = name === 'bounce' && e.type === 'blocked';
  const droppedFor =
    name === 'dropped' ? DROPPED_REASONS.find((r) => r.match.test(str(e.reason) ?? '')) : undefined;
  const receipt: IncomingReceipt = {
    eventId,
    event: name,
    status: known?.status ?? null,
    failure: blocked ? 'provider_undelivered' : (droppedFor?.failure ?? known?.failure ?? null),
  };
  const code = str(e.status, 16);
  if (code !== undefined) receipt.providerCode = code;
  if (timestamp !== undefined) {
    const at = new Date(timestamp * 1000);
    if (!Number.isNaN(at.getTime())) receipt.occurredAt = at;
  }
  const verified: VerifiedReceipt = { receipt, type: known ? name : 'other' };
  const deliveryId = str(e.delivery_id, 64);
  if (deliveryId !== undefined) verified.deliveryId = deliveryId;
  // sg_message_id is the API's X-Message-Id followed by `.filter...`: the part before the dot is ours.
  if (messageId !== undefined) verified.providerReference = messageId.split('.')[0]!;
  const email = str(e.email, 320);
  if (known?.suppress && !blocked && email !== undefined) {
    verified.suppress = { recipient: email.toLowerCase(), reason: known.suppress };
  }
  return verified;
}

/** What the route is built from. */
export interface EmailWebhookOptions {
  backends: readonly NamedMailerConfig[];
  webhooks: WebhooksConfig;
  recorder: ReceiptRecorder;
  clock?: Clock;
}

/** The event webhook route of every http_api mailer with an `event_webhook_public_key`. */
export function emailWebhookRoutes(opts: EmailWebhookOptions): Route[] {
  const clock = dateReader(opts.clock);
  const keys = new Map<string, { source: ReceiptSource; key: KeyObject }>();
  for (const b of opts.backends) {
    const publicKey = b.http_api?.event_webhook_public_key;
    if (b.driver !== 'http_api' || publicKey === undefined) continue;
    keys.set(b.name, {
      source: { channel: 'email', backend: b.name, provider: b.driver },
      key: eventWebhookKey(publicKey),
    });
  }
  return [
    {
      methods: ['POST'],
      path: EMAIL_EVENTS_WEBHOOK_PATH,
      async handler(req, res, ctx) {
        const backend = keys.get(ctx.params.backend!);
        if (!backend) {
          req.resume();
          noSuchWebhook(res, 'no email backend of that name with an event_webhook_public_key');
          return;
        }
        const body = await readWebhookBody(req, res, opts.webhooks.max_body_bytes);
        if (body === undefined) return;
        const signature = req.headers[EVENT_WEBHOOK_SIGNATURE_HEADER];
        const timestamp = req.headers[EVENT_WEBHOOK_TIMESTAMP_HEADER];
        if (
          typeof signature !== 'string' ||
          typeof timestamp !== 'string' ||
          !verifyEventWebhookSignature(backend.key, timestamp, body, signature)
        ) {
          opts.recorder.forged(backend.source);
          refuseSignature(res, `missing or invalid ${EVENT_WEBHOOK_SIGNATURE_HEADER}`);
          return;
        }
        // Checked after the signature, so the timestamp is the provider's, not a forger's.
        const seconds = /^\d{1,12}$/.test(timestamp) ? Number(timestamp) : NaN;
        const age = clock().getTime() / 1000 - seconds;
        if (!(Math.abs(age) <= opts.webhooks.max_age_seconds)) {
          opts.recorder.forged(backend.source, 'stale');
          refuseSignature(
            res,
            `${EVENT_WEBHOOK_TIMESTAMP_HEADER} is not within ${opts.webhooks.max_age_seconds} s of now`,
          );
          return;
        }
        let events: unknown;
        try {
          events = JSON.parse(body.toString('utf8'));
        } catch {
          sendJsonError(res, 'invalid_argument', 'the body is not JSON');
          return;
        }
        if (!Array.isArray(events)) {
          sendJsonError(res, 'invalid_argument', 'the body is not a JSON array of events');
          return;
        }
        // Beyond the cap, events are answered as skipped, never read (the body limit bounds it anyway).
        const counts: Record<RecordOutcome | 'skipped', number> = {
          verified: 0,
          duplicate: 0,
          unknown_message: 0,
          foreign_backend: 0,
          replay: 0,
          unsupported_sender: 0,
          failed: 0,
          skipped: Math.max(0, events.length - MAX_EVENTS_PER_BATCH),
        };
        // One after the other: events of one message in a batch are in the provider's order. Each on
        // its own: one that cannot be applied never keeps the others from being applied.
        let retry = false;
        for (const value of events.slice(0, MAX_EVENTS_PER_BATCH)) {
          const verified = parseEvent(value);
          if (!verified) {
            counts.skipped++;
            continue;
          }
          try {
            // An event that suppresses is taken once: replayed within the signed window, it would put
            // back an address an operator lifted since. Others change nothing when repeated.
            counts[
              verified.suppress
                ? await opts.recorder.recordOnce(
                    backend.source,
                    `event:${verified.receipt.eventId}`,
                    verified,
                  )
                : await opts.recorder.record(backend.source, verified)
            ]++;
          } catch {
            // Counted and logged by the recorder; it may pass later (the store could not be reached).
            counts.failed++;
            retry = true;
          }
        }
        if (retry) {
          // The provider sends the batch again; what was applied is then a duplicate.
          sendJsonError(
            res,
            'unavailable',
            'some events could not be applied now; send the batch again later',
          );
          return;
        }
        sendJson(res, 200, counts);
      },
    },
  ];
}
