/**
 * A delivery's recipients as the activity filter matches them: normalised as `normaliseRecipient`
 * keys the suppression list (an email address trimmed and lower-cased, each of a comma-separated
 * list; an SMS number without spaces, dashes, dots and parentheses; a device token trimmed). The
 * database keeps the same as the generated column `deliveries.recipient_keys` (migration
 * 20261129000000); the memory store computes it here. A record whose recipient was erased has none.
 */
import type { Channel } from './driver';

/** The keys of a record's recipient (empty when erased). */
export function recipientKeys(record: { channel: Channel; recipient: string | null }): string[] {
  const { recipient } = record;
  if (recipient === null) return [];
  switch (record.channel) {
    case 'email':
      return recipient.replace(/\s+/g, '').toLowerCase().split(',');
    case 'sms':
      return [recipient.replace(/[\s().-]/g, '')];
    default:
      return [recipient.trim()];
  }
}
