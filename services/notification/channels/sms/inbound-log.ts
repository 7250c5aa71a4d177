/**
 * The inbound SMS log: the text messages people send to our numbers (verified by the backend's
 * webhook signature; STOP / START and their synonyms excluded, they go to the suppression list), kept
 * so a consumer (the monitor's `ACK <code>`) can read them with WatchInboundSms.
 *
 * - Each message gets an `id` that grows in commit order (the database store numbers them under a
 *   row lock in the inserting transaction), so "the messages after id N" never skips one, whichever
 *   replica took it: the id is the stream's cursor.
 * - Bounded: a body is cut at {@link MAX_INBOUND_SMS_BODY_CODE_POINTS} code points; the log keeps at
 *   most `maxMessages` (the oldest go as a new one arrives) and messages younger than the retention
 *   (`purgeExpired`, run by the periodic job of inbound-log-retention.ts). What the cap or the
 *   retention removed moves the horizon: a reader behind it gets a `reset`, never a silent jump.
 * - Erasure (DeleteUser): `eraseSenders` deletes every message from the user's numbers. It does not
 *   move the horizon: the erased messages simply are no longer there for anybody, and a consumer that
 *   is behind keeps the other messages it has not read yet (a reset would skip them all).
 * - A provider's message id is logged once per backend (a retried webhook adds nothing).
 *
 * Two stores, chosen by `delivery.store_backend` like the other receipt stores:
 * `InMemoryInboundSmsLog` (inbound-log-memory-store.ts) and `DatabaseInboundSmsLog`
 * (inbound-log-database-store.ts, tables of migration 20261128800000_inbound_sms).
 */
import { cutText, wellFormed } from '../../../../shared/text/cut';

/** Longest body kept, in Unicode code points (the Messages API's own limit, as for SendSms). */
export const MAX_INBOUND_SMS_BODY_CODE_POINTS = 1600;
/** Longest `to` kept (our number as the provider gave it), in code points. */
export const MAX_INBOUND_SMS_TO_CODE_POINTS = 32;
/** Default retention of the log, in hours (`notification.webhooks.inbound_sms_retention_hours`). */
export const DEFAULT_INBOUND_SMS_RETENTION_HOURS = 72;
/** Default cap of the log (`notification.webhooks.inbound_sms_max_messages`). */
export const DEFAULT_INBOUND_SMS_MAX_MESSAGES = 100_000;
/** The PostgreSQL NOTIFY channel an append announces its id on (other replicas' streams). */
export const INBOUND_SMS_CHANNEL = 'inbound_sms';

/** A message as the webhook verified it, before it is logged. */
export interface NewInboundSms {
  /** The configured backend whose webhook received it. */
  backend: string;
  /** The provider's message id (Twilio MessageSid): one log entry per backend and id. */
  providerId: string;
  /** The sender, normalised E.164. */
  from: string;
  /** Our number it was sent to, as the provider gave it. */
  to: string;
  body: string;
}

/** One logged message. */
export interface InboundSms {
  /** Monotonic in commit order: the stream's cursor. */
  id: number;
  backend: string;
  from: string;
  to: string;
  /** At most MAX_INBOUND_SMS_BODY_CODE_POINTS code points. */
  body: string;
  /** When it was logged (the database's clock, or the memory store's). */
  receivedAt: Date;
}

/** Where inbound messages are kept. */
export interface InboundSmsLog {
  readonly backend: 'database' | 'memory';
  /**
   * Logs a message (body and `to` cut, text made storable) and drops the oldest beyond the cap.
   * Null when this backend already logged this provider id (nothing added).
   */
  append(message: NewInboundSms): Promise<InboundSms | null>;
  /** Messages after `afterId`, oldest first, at most `limit`. */
  after(afterId: number, limit: number): Promise<InboundSms[]>;
  /** The newest id ever given (kept or not); 0 when none. */
  latestId(): Promise<number>;
  /** The highest id the cap or the retention removed; 0 when none. */
  horizon(): Promise<number>;
  /**
   * Deletes the messages older than `retentionHours`, at most `batch` per statement, oldest first;
   * returns how many went. Stops between batches once `signal` aborts.
   */
  purgeExpired(retentionHours: number, batch: number, signal?: AbortSignal): Promise<number>;
  /** Deletes every message from these numbers (a user's personal data); returns how many went. */
  eraseSenders(numbers: readonly string[]): Promise<number>;
  /** Local appends: called with the new id after its commit; returns unsubscribe. */
  onAppended(listener: (id: number) => void): () => void;
}

// C0 controls but tab, line feed and carriage return, and DEL (NUL cannot be stored in PostgreSQL text).
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g;

/** Storable text: lone surrogates and control characters (bar tab and line breaks) become U+FFFD. */
function storable(text: string): string {
  return wellFormed(text).replace(CONTROL, '\ufffd');
}

/** The body as it is kept: storable, cut at MAX_INBOUND_SMS_BODY_CODE_POINTS code points. */
export function inboundSmsBody(body: string): string {
  return cutText(storable(body), MAX_INBOUND_SMS_BODY_CODE_POINTS, { unit: 'code_point' });
}

/** `to` as it is kept: storable, cut at MAX_INBOUND_SMS_TO_CODE_POINTS code points. */
export function inboundSmsTo(to: string): string {
  return cutText(storable(to), MAX_INBOUND_SMS_TO_CODE_POINTS, { unit: 'code_point' });
}
