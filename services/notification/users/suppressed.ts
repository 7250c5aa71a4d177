/**
 * Which of a user's contact points are on the suppression list, and why (GetUser's `suppressed`):
 * a hard bounce, a STOP or a dead token keeps a channel silent, and the user's view says so.
 */
import type { Channel } from '../delivery/driver';
import type { User } from './types';

/** The channels a contact point belongs to: the delivery channels. */
export type ContactChannel = Channel;

/** One of a user's contact points found on the suppression list. */
export interface SuppressedContact {
  channel: ContactChannel;
  /** The contact point as the user has it. */
  address: string;
  /** The suppression reason (`hard_bounce`, `stop_keyword`, `unregistered_token`...). */
  reason: string;
}

/** What the lookup needs of the suppression list (delivery/suppression.ts `Suppressions.reasonsOf`). */
export interface SuppressionReasons {
  reasonsOf(channel: ContactChannel, recipients: readonly string[]): Promise<Map<string, string>>;
}

/** The user's suppressed contact points: emails, then phones, then device tokens, each in the user's order. */
export async function suppressedContacts(user: User, list: SuppressionReasons): Promise<SuppressedContact[]> {
  const points: [ContactChannel, string[]][] = [
    ['email', user.emails],
    ['sms', user.phones],
    ['push', user.devices.map((d) => d.token)],
  ];
  const found = await Promise.all(
    points.map(async ([channel, addresses]) => {
      if (addresses.length === 0) return [];
      const reasons = await list.reasonsOf(channel, addresses);
      return addresses.flatMap((address) => {
        const reason = reasons.get(address);
        return reason === undefined ? [] : [{ channel, address, reason }];
      });
    }),
  );
  return found.flat();
}
