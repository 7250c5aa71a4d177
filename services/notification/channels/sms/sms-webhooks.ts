/**
 * The sms_gateway backends' webhooks (Twilio's protocol): status callbacks
 * (`POST /webhooks/sms/{backend}/status`: MessageSid, MessageStatus, ErrorCode) become delivery
 * receipts; inbound messages (`POST /webhooks/sms/{backend}/inbound`) of STOP and its synonyms
 * suppress the sender, START / UNSTOP / YES lift it, and any other reply goes to the inbound SMS log
 * (inbound-log.ts, streamed by WatchInboundSms).
 *
 * Both are verified by `X-Twilio-Signature`: base64 HMAC-SHA1 keyed with the backend's auth_token over
 * the full URL the provider called followed by every form field, sorted by name, name then value. No
 * bearer token: the signature is the authentication. A missing or wrong one is 403 and changes
 * nothing. Twilio signs no timestamp, so the ids of the callbacks taken are remembered per backend
 * (`ReceiptRecorder.recordOnce` / `inbound`, the inbound replay store): a status callback seen before
 * (same MessageSid and MessageStatus) or an inbound message seen before (same MessageSid) is answered
 * 200 and changes nothing, so a captured STOP replayed after START does not opt the number out again.
 * A sender that is not a phone number (WhatsApp, alphanumeric ids) is answered 200 and ignored. A
 * callback that cannot be applied now (the suppression list past its bound, the database unreachable)
 * is answered 503, so the provider sends it again.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

import { sendJsonError } from '../../../../shared/http/errors';
import type { Route } from '../../../../shared/http/routes';
import type { FailureKind, IncomingReceipt } from '../../delivery';
import type { ReceiptRecorder, ReceiptSource, VerifiedReceipt } from '../../delivery/receipt-recorder';
import {
  SMS_INBOUND_WEBHOOK_PATH,
  SMS_STATUS_WEBHOOK_PATH,
  noSuchWebhook,
  readWebhookBody,
  refuseSignature,
} from '../../delivery/webhook-http';
import type { WebhooksConfig } from '../../delivery/webhooks-config';
import type { NamedSMSConfig } from './config';

/** The header carrying the signature. */
export const TWILIO_SIGNATURE_HEADER = 'x-twilio-signature';

/**
 * The signature of a request to `url` with `params` (form fields): base64 HMAC-SHA1 over the URL and
 * the fields sorted by name (values of a repeated name sorted too), each name then value.
 */
export function twilioSignature(
  authToken: string,
  url: string,
  params: Iterable<readonly [string, string]>,
): string {
  const pairs = [...params].sort(([a, av], [b, bv]) =>
    a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0,
  );
  const hmac = createHmac('sha1', authToken).update(url, 'utf8');
  for (const [name, value] of pairs) hmac.update(name + value, 'utf8');
  return hmac.digest('base64');
}

/** True when `given` is the signature of the request (compared in constant time). */
export function verifyTwilioSignature(
  authToken: string,
  url: string,
  params: Iterable<readonly [string, string]>,
  given: string | undefined,
): boolean {
  if (given === undefined || given === '') return false;
  const expected = Buffer.from(twilioSignature(authToken, url, params));
  const actual = Buffer.from(given);
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

/** Inbound bodies that opt out (Twilio's standard opt-out keywords). */
export const STOP_KEYWORDS: readonly string[] = [
  'STOP',
  'STOPALL',
  'UNSUBSCRIBE',
  'CANCEL',
  'END',
  'QUIT',
  'OPTOUT',
  'REVOKE',
];
/** Inbound bodies that opt back in. */
export const START_KEYWORDS: readonly string[] = ['START', 'UNSTOP', 'YES'];

/** MessageStatus values we know; any other is counted as `other` and changes nothing. */
const STATUS_RECEIPTS: Readonly<Record<string, IncomingReceipt['status']>> = {
  accepted: null,
  scheduled: null,
  queued: null,
  sending: null,
  sent: 'sent',
  delivered: 'delivered',
  read: 'delivered',
  undelivered: 'undelivered',
  failed: 'undelivered',
};

/** ErrorCodes of an undelivered message with a cause of their own; others are provider_undelivered. */
const ERROR_CODE_FAILURES: Readonly<Record<string, FailureKind>> = {
  '21610': 'recipient_unsubscribed', // the recipient replied STOP
  '30003': 'recipient_invalid', // unreachable handset
  '30005': 'recipient_invalid', // unknown destination
  '30006': 'recipient_invalid', // landline or unreachable carrier
};

/** Form fields of one request, in order (repeats kept). */
function formFields(body: Buffer): [string, string][] {
  return [...new URLSearchParams(body.toString('utf8'))];
}

/** A short, printable copy of a provider value for the history (never used as a metric label). */
function safe(value: string, max = 64): string {
  return value.replace(/[^\x20-\x7e]/g, '').slice(0, max);
}

/** The receipt a verified status callback stands for; undefined when it names no message. */
export function parseStatusCallback(fields: ReadonlyMap<string, string>): VerifiedReceipt | undefined {
  const sid = fields.get('MessageSid') ?? fields.get('SmsSid') ?? '';
  const rawStatus = (fields.get('MessageStatus') ?? fields.get('SmsStatus') ?? '').toLowerCase();
  if (sid === '' || rawStatus === '') return undefined;
  const known = Object.hasOwn(STATUS_RECEIPTS, rawStatus);
  const status = known ? STATUS_RECEIPTS[rawStatus]! : null;
  const errorCode = fields.get('ErrorCode') ?? '';
  const failure: FailureKind | null =
    status === 'undelivered' ? (ERROR_CODE_FAILURES[errorCode] ?? 'provider_undelivered') : null;
  const receipt: IncomingReceipt = {
    eventId: `${safe(sid)}:${safe(rawStatus, 32)}`,
    event: safe(rawStatus, 32),
    status,
    failure,
  };
  if (errorCode !== '') receipt.providerCode = safe(errorCode, 16);
  const verified: VerifiedReceipt = {
    receipt,
    type: known ? rawStatus : 'other',
    providerReference: sid,
  };
  const to = fields.get('To');
  if (errorCode === '21610' && to) verified.suppress = { recipient: to, reason: 'unsubscribed' };
  return verified;
}

/** What the routes are built from. */
export interface SmsWebhookOptions {
  backends: readonly NamedSMSConfig[];
  webhooks: WebhooksConfig;
  recorder: ReceiptRecorder;
}

/** The two SMS webhook routes of every sms_gateway backend. */
export function smsWebhookRoutes(opts: SmsWebhookOptions): Route[] {
  const byName = new Map(opts.backends.filter((b) => b.sms_gateway).map((b) => [b.name, b]));

  /** The backend, its verified form fields, or undefined after answering. */
  const verify = async (
    req: IncomingMessage,
    res: ServerResponse,
    backendName: string,
    kind: string,
  ): Promise<{ source: ReceiptSource; fields: Map<string, string> } | undefined> => {
    const backend = byName.get(backendName);
    if (!backend) {
      req.resume();
      noSuchWebhook(res, 'no SMS backend of that name');
      return undefined;
    }
    const source: ReceiptSource = { channel: 'sms', backend: backend.name, provider: backend.driver };
    const body = await readWebhookBody(req, res, opts.webhooks.max_body_bytes);
    if (body === undefined) return undefined;
    const fields = formFields(body);
    const signature = req.headers[TWILIO_SIGNATURE_HEADER];
    if (
      !verifyTwilioSignature(
        backend.sms_gateway!.auth_token,
        signedUrl(req, opts.webhooks.public_base_url),
        fields,
        typeof signature === 'string' ? signature : undefined,
      )
    ) {
      opts.recorder.forged(source, kind);
      refuseSignature(res, `missing or invalid ${TWILIO_SIGNATURE_HEADER}`);
      return undefined;
    }
    return { source, fields: new Map(fields) };
  };

  return [
    {
      methods: ['POST'],
      path: SMS_STATUS_WEBHOOK_PATH,
      async handler(req, res, ctx) {
        const verified = await verify(req, res, ctx.params.backend!, 'status');
        if (!verified) return;
        const receipt = parseStatusCallback(verified.fields);
        if (receipt) {
          // One callback is one (MessageSid, MessageStatus): the same again is a replay.
          const applied = await orRetryLater(res, () =>
            opts.recorder.recordOnce(verified.source, `status:${receipt.receipt.eventId}`, receipt),
          );
          if (!applied) return;
        } else opts.recorder.count(verified.source, 'other', 'unknown_message');
        answerTwiml(res);
      },
    },
    {
      methods: ['POST'],
      path: SMS_INBOUND_WEBHOOK_PATH,
      async handler(req, res, ctx) {
        const verified = await verify(req, res, ctx.params.backend!, 'inbound');
        if (!verified) return;
        const keyword = (verified.fields.get('Body') ?? '').trim().toUpperCase();
        const applied = await orRetryLater(res, () =>
          opts.recorder.inbound(verified.source, {
            id: verified.fields.get('MessageSid') ?? verified.fields.get('SmsMessageSid') ?? '',
            from: verified.fields.get('From') ?? '',
            to: verified.fields.get('To') ?? '',
            body: verified.fields.get('Body') ?? '',
            type: STOP_KEYWORDS.includes(keyword)
              ? 'inbound_stop'
              : START_KEYWORDS.includes(keyword)
                ? 'inbound_start'
                : 'inbound_other',
          }),
        );
        if (applied) answerTwiml(res);
      },
    },
  ];
}

/**
 * The URL the provider signed: `public_base_url` and the request target when configured, else what
 * the request says (`http://{Host}{target}`).
 */
function signedUrl(req: IncomingMessage, publicBaseUrl: string | undefined): string {
  const target = req.url ?? '/';
  if (publicBaseUrl !== undefined) return publicBaseUrl.replace(/\/+$/, '') + target;
  return `http://${req.headers.host ?? ''}${target}`;
}

/**
 * Runs a recorder call; true when it ended. What the recorder throws may pass (it answers `failed`
 * for what never will, counts and logs the rest, and forgets the callback id so it is taken again): a
 * suppression list past its bound (a STOP's add, delivery/README.md "Every suppression list call
 * bounded"), a database that cannot be reached. That is answered 503 with a message naming nothing
 * (as the email event webhook does), not the router's 500 "internal error", so the provider sends it
 * again.
 */
async function orRetryLater(res: ServerResponse, apply: () => Promise<unknown>): Promise<boolean> {
  try {
    await apply();
    return true;
  } catch (err) {
    if (res.headersSent) throw err;
    sendJsonError(res, 'unavailable', 'the callback could not be applied now; send it again later');
    return false;
  }
}

/** An empty TwiML answer: the provider expects XML and sends nothing back to the sender. */
function answerTwiml(res: ServerResponse): void {
  const body = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>';
  res.writeHead(200, {
    'Content-Type': 'text/xml; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
  });
  res.end(body);
}
