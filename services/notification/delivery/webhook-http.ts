/**
 * What the provider receipt routes (channels/sms/sms-webhooks.ts, channels/email/event-webhook.ts)
 * share on the HTTP side: the bounded body read (413 over `webhooks.max_body_bytes`), the refusal of
 * a missing or wrong signature (403, nothing changed), and the route paths.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { BODY_TOO_LARGE, readBoundedBody } from '../../../shared/http/body';
import { sendJsonError } from '../../../shared/http/errors';

/** Path of an SMS backend's status callbacks (`:backend` is the backend's configured name). */
export const SMS_STATUS_WEBHOOK_PATH = '/webhooks/sms/:backend/status';
/** Path of an SMS backend's inbound messages (STOP, START). */
export const SMS_INBOUND_WEBHOOK_PATH = '/webhooks/sms/:backend/inbound';
/** Path of an email backend's event webhook. */
export const EMAIL_EVENTS_WEBHOOK_PATH = '/webhooks/email/:backend/events';

/** A route path with its `:backend` filled in (percent-encoded), for the URLs given to providers. */
export function webhookPath(pattern: string, backend: string): string {
  return pattern.replace(':backend', encodeURIComponent(backend));
}

/**
 * The raw body, or undefined after answering 413 (the connection is closed: the rest of the body is
 * never read).
 */
export async function readWebhookBody(
  req: IncomingMessage,
  res: ServerResponse,
  maxBytes: number,
): Promise<Buffer | undefined> {
  const body = await readBoundedBody(req, maxBytes);
  if (body !== BODY_TOO_LARGE) return body;
  sendJsonError(res, 'resource_exhausted', `the body is larger than ${maxBytes} bytes`, {
    status: 413,
    headers: { Connection: 'close' },
  });
  return undefined;
}

/** 403: the signature is missing, wrong or stale. Says which, never what was expected. */
export function refuseSignature(res: ServerResponse, why: string): void {
  sendJsonError(res, 'permission_denied', why);
}

/** 404 for a backend that has no such webhook (unknown name, or no verification key configured). */
export function noSuchWebhook(res: ServerResponse, what: string): void {
  sendJsonError(res, 'not_found', what);
}
