/**
 * `PushPayload`: one push notification to one device as the pipeline stores it and the push drivers
 * send it, and the checks every push send passes before anything is recorded.
 */
import { InvalidArgumentError } from '../../../../shared/errors';

/** Delivery priority: APNs 10 / 5, FCM HIGH / NORMAL. */
export type PushPriority = 'high' | 'normal';

/** One notification to one device. */
export interface PushPayload {
  /** The device registration token (FCM) or device token (APNs). */
  deviceToken: string;
  title?: string;
  body?: string;
  /** Custom key-value data delivered to the app. */
  data?: Record<string, string>;
  /** Notifications with the same key replace each other (APNs apns-collapse-id, FCM collapse_key). */
  collapseKey?: string;
  /** Seconds the provider keeps trying; 0 means deliver now or never. Absent: the provider default. */
  ttlSeconds?: number;
  priority?: PushPriority;
}

/** Longest device token accepted (APNs tokens are 64 hex digits, FCM tokens about 160 characters). */
export const MAX_DEVICE_TOKEN_LENGTH = 4096;
/** Longest collapse key (APNs' limit, also applied to FCM so a message fits either). */
export const MAX_COLLAPSE_KEY_BYTES = 64;
/** Longest TTL: four weeks (FCM's maximum; APNs keeps a notification for a limited time too). */
export const MAX_TTL_SECONDS = 28 * 24 * 3600;
/** Largest notification payload APNs accepts, in bytes of its JSON. */
export const APNS_MAX_PAYLOAD_BYTES = 4096;
/** Largest notification payload FCM accepts, in bytes of its JSON. */
export const FCM_MAX_PAYLOAD_BYTES = 4096;

// Device tokens are opaque but printable: hex (APNs) or base64url with ':' (FCM).
const TOKEN = /^[A-Za-z0-9_:.-]+$/;

/**
 * Validates one message (the field names are those of the wire's `PushMessage`, prefixed with
 * `field`) and returns it in stored form. InvalidArgumentError naming the field for bad input.
 */
export function checkPushPayload(input: PushPayload, field = 'message'): PushPayload {
  const token = input.deviceToken;
  if (typeof token !== 'string' || token === '') {
    throw new InvalidArgumentError(`${field}.device_token is required`, `${field}.device_token`);
  }
  if (token.length > MAX_DEVICE_TOKEN_LENGTH) {
    throw new InvalidArgumentError(
      `${field}.device_token is longer than ${MAX_DEVICE_TOKEN_LENGTH} characters`,
      `${field}.device_token`,
    );
  }
  if (!TOKEN.test(token)) {
    throw new InvalidArgumentError(
      `${field}.device_token may only contain letters, digits and _ : . -`,
      `${field}.device_token`,
    );
  }
  const out: PushPayload = { deviceToken: token };
  if (input.title) out.title = input.title;
  if (input.body) out.body = input.body;
  if (input.data && Object.keys(input.data).length > 0) out.data = { ...input.data };
  if (input.collapseKey) {
    if (Buffer.byteLength(input.collapseKey) > MAX_COLLAPSE_KEY_BYTES) {
      throw new InvalidArgumentError(
        `${field}.collapse_key is longer than ${MAX_COLLAPSE_KEY_BYTES} bytes`,
        `${field}.collapse_key`,
      );
    }
    out.collapseKey = input.collapseKey;
  }
  if (input.ttlSeconds !== undefined) {
    if (!Number.isInteger(input.ttlSeconds) || input.ttlSeconds < 0 || input.ttlSeconds > MAX_TTL_SECONDS) {
      throw new InvalidArgumentError(
        `${field}.ttl_seconds must be an integer from 0 to ${MAX_TTL_SECONDS}`,
        `${field}.ttl_seconds`,
      );
    }
    out.ttlSeconds = input.ttlSeconds;
  }
  if (input.priority !== undefined) {
    if (input.priority !== 'high' && input.priority !== 'normal') {
      throw new InvalidArgumentError(`${field}.priority must be high or normal`, `${field}.priority`);
    }
    out.priority = input.priority;
  }
  if (!out.title && !out.body && !out.data) {
    throw new InvalidArgumentError(`${field}.body: a title, a body or data is required`, `${field}.body`);
  }
  return out;
}

/** Everything of a payload but its device token: what a legacy FCM multicast call shares. */
export function contentKey(p: PushPayload): string {
  return JSON.stringify([p.title, p.body, p.data, p.collapseKey, p.ttlSeconds, p.priority]);
}
