/**
 * The users area's input rules: what UpsertUser, RegisterDevice and the topic calls accept, and the
 * normal form they store. Every refusal is InvalidArgumentError naming the field.
 */
import { InvalidArgumentError } from '../../../shared/errors';
import { hasUnstorableText } from '../../../shared/text/cut';
import { checkText } from '../../../shared/text/check';
import { resolveTimeZone } from '../../../shared/time/zone';
import { parseMailbox } from '../channels/email/mailable';
import { normaliseRecipient } from '../delivery/suppression';
import type { UsersConfig } from './config';
import { normaliseQuietHours } from './quiet-hours';
import type { DevicePlatform, UserInput } from './types';

/** The topic name rule of the proto: 1-128 of letters, digits and `._:-`. */
const TOPIC = /^[A-Za-z0-9._:-]{1,128}$/;
/** Longest locale tag accepted (BCP 47 tags with extensions stay well under it). */
const MAX_LOCALE_LENGTH = 64;
/** Longest IANA zone name accepted. */
const MAX_TIME_ZONE_LENGTH = 64;

/** The user id rule: 1 to `max` code points, no control characters, storable text. */
export function checkUserId(userId: unknown, max: number, field = 'user_id'): string {
  return checkText(userId, field, { max, required: 'non_empty' });
}

/**
 * A list of user ids (a topic call): each checked, duplicates removed (first kept), at most `max`
 * ids given.
 */
export function checkUserIds(userIds: readonly unknown[], maxIdLength: number, max: number): string[] {
  if (userIds.length === 0)
    throw new InvalidArgumentError('user_ids must name at least one user', 'user_ids');
  if (userIds.length > max) {
    throw new InvalidArgumentError(`user_ids must name at most ${max} users per call`, 'user_ids');
  }
  return [...new Set(userIds.map((id, i) => checkUserId(id, maxIdLength, `user_ids[${i}]`)))];
}

/** The topic name rule. */
export function checkTopic(topic: unknown): string {
  if (typeof topic !== 'string' || !TOPIC.test(topic)) {
    throw new InvalidArgumentError('topic must be 1-128 of letters, digits and "._:-"', 'topic');
  }
  return topic;
}

/**
 * One email address: a bare mailbox as the email channel accepts it (its parser and its narrowing),
 * trimmed, the domain lower-cased (the local part is the mailbox owner's and kept as given).
 */
function normaliseEmail(raw: unknown, field: string): string {
  const value = typeof raw === 'string' ? raw.trim() : raw;
  const mailbox = parseMailbox(value, field);
  if (mailbox.name !== undefined || mailbox.email !== value) {
    throw new InvalidArgumentError(
      `${field}: give the bare address (jane@example.com), no display name`,
      field,
    );
  }
  const at = mailbox.email.lastIndexOf('@');
  return `${mailbox.email.slice(0, at)}@${mailbox.email.slice(at + 1).toLowerCase()}`;
}

/** A list normalised by `one`, duplicates (by `key`) removed, first kept, at most `max` left. */
function normaliseList(
  values: readonly unknown[],
  field: string,
  max: number,
  one: (v: unknown, field: string) => string,
  key: (v: string) => string = (v) => v,
): string[] {
  const seen = new Map<string, string>();
  values.forEach((v, i) => {
    const normal = one(v, `${field}[${i}]`);
    if (!seen.has(key(normal))) seen.set(key(normal), normal);
  });
  if (seen.size > max) throw new InvalidArgumentError(`${field} must hold at most ${max} entries`, field);
  return [...seen.values()];
}

/** A BCP 47 locale canonicalised (`es-mx` -> `es-MX`); '' stays '' (the default locale). */
export function canonicalLocale(locale: unknown): string {
  if (locale === '' || locale === undefined) return '';
  const bad = () => new InvalidArgumentError('locale must be a BCP 47 language tag such as es-MX', 'locale');
  if (typeof locale !== 'string' || locale.length > MAX_LOCALE_LENGTH) throw bad();
  try {
    const [canonical] = Intl.getCanonicalLocales(locale);
    if (canonical === undefined) throw bad();
    return canonical;
  } catch {
    throw bad();
  }
}

/** An IANA time zone in its canonical spelling (`europe/madrid` -> `Europe/Madrid`); '' stays ''. */
export function canonicalTimeZone(timeZone: unknown): string {
  if (timeZone === '' || timeZone === undefined) return '';
  const bad = () =>
    new InvalidArgumentError('time_zone must be an IANA time zone such as Europe/Madrid', 'time_zone');
  if (typeof timeZone !== 'string' || timeZone.length > MAX_TIME_ZONE_LENGTH) throw bad();
  const canonical = resolveTimeZone(timeZone);
  if (canonical === undefined) throw bad();
  return canonical;
}

/** A JSON object of at most `maxBytes` UTF-8 bytes that PostgreSQL's jsonb can hold. */
export function checkAttributes(attributes: unknown, maxBytes: number): Record<string, unknown> {
  if (attributes === undefined || attributes === null) return {};
  if (typeof attributes !== 'object' || Array.isArray(attributes)) {
    throw new InvalidArgumentError('attributes must be a JSON object', 'attributes');
  }
  let text: string;
  try {
    text = JSON.stringify(attributes);
  } catch {
    throw new InvalidArgumentError('attributes must be a JSON object', 'attributes');
  }
  if (Buffer.byteLength(text, 'utf8') > maxBytes) {
    throw new InvalidArgumentError(`attributes must be at most ${maxBytes} bytes as JSON`, 'attributes');
  }
  if (hasUnstorableText(text)) {
    throw new InvalidArgumentError('attributes must not contain NUL characters or broken text', 'attributes');
  }
  // Stored as its JSON round trip (no undefined, no functions, no class instances).
  return JSON.parse(text) as Record<string, unknown>;
}

/** What UpsertUser stores: every field checked and normalised. */
export function normaliseUserInput(input: UserInput, config: UsersConfig): UserInput {
  return {
    userId: checkUserId(input.userId, config.max_user_id_length),
    emails: normaliseList(input.emails, 'emails', config.max_emails, normaliseEmail, (e) => e.toLowerCase()),
    phones: normaliseList(input.phones, 'phones', config.max_phones, (p, field) =>
      normaliseRecipient('sms', p, field),
    ),
    locale: canonicalLocale(input.locale),
    timeZone: canonicalTimeZone(input.timeZone),
    attributes: checkAttributes(input.attributes, config.max_attributes_bytes),
    quietHours: normaliseQuietHours(input.quietHours),
  };
}

/** A device token as the push channel keys it (trimmed, no whitespace, at most 4096 characters). */
export function checkToken(token: unknown): string {
  return normaliseRecipient('push', token, 'token');
}

/** The platform of a device: `apns` or `fcm`. */
export function checkPlatform(platform: unknown): DevicePlatform {
  if (platform !== 'apns' && platform !== 'fcm') {
    throw new InvalidArgumentError('platform is required: APNS or FCM', 'platform');
  }
  return platform;
}
