/**
 * SuppressionSink: where provider receipts send the recipients who must not be contacted again (a hard
 * bounce, a spam complaint, an unsubscribe, SMS STOP) and the ones who opted back in (START, UNSTOP).
 * The suppression list implements it; the receipts area only knows this interface.
 */
import type { Channel } from './driver';
import type { SuppressionReason } from './suppression';

/** One recipient to suppress. */
export interface SuppressionEntry {
  channel: Channel;
  /** Normalised: lower-cased address, E.164 number, device token. */
  recipient: string;
  /** Why: `hard_bounce`, `spam_complaint`, `unsubscribed` (also SMS error 21610), `stop_keyword`. */
  reason: SuppressionReason;
  /** Who said so (`receipt:<backend>`). */
  source: string;
}

/** The suppression list as receipts see it. */
export interface SuppressionSink {
  /** Suppresses a recipient; true when it was not suppressed before. */
  add(entry: SuppressionEntry): Promise<boolean>;
  /** Lifts a suppression; true when there was one. */
  remove(channel: Channel, recipient: string): Promise<boolean>;
}
