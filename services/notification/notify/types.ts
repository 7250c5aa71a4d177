/**
 * The notify area's records: a notification (one `Notify` call for a user, a topic notification, or
 * one user's notification a topic fan-out created) and the lines of its fan-out. Domain types only:
 * `rpc/notify-rpc.ts` maps them to the wire.
 */
import type { NotifyChannel } from './config';
import type { TemplateContent } from '../templates/types';

/** Where a notification's fan-out stands. */
export type NotificationStatus = 'accepted' | 'fanning_out' | 'fanned_out' | 'scheduled' | 'cancelled';

/** NORMAL unless the caller says CRITICAL. */
export type NotifyPriority = 'normal' | 'critical';

/** Why a channel sent nothing. */
export const SKIP_REASONS = [
  'preference_off',
  'no_contact_point',
  'no_template',
  'overridden',
  'channel_not_configured',
  'suppressed',
  'render_failed',
  'throttled',
  'cancelled',
] as const;
/** One skip reason. */
export type SkipReason = (typeof SKIP_REASONS)[number];

/** Why a line waits (`heldUntil`). */
export type HoldReason = 'quiet_hours' | 'cap_deferred';

/** One line of a fan-out: one channel and contact point. */
export interface ChannelLine {
  channel: NotifyChannel;
  /** The contact point, masked ('' for the inbox and when there is none). */
  contact: string;
  /** The inbox message id or the delivery id; null when skipped or failed. */
  messageId: string | null;
  /** Set when the channel sent nothing. */
  skipped: SkipReason | null;
  /** A short explanation of a skip or a failure (never content or a full address). */
  error: string | null;
  /** The locale of the template used ('' when none was rendered). */
  locale: string;
  /** A held line (one per channel, contact ''): when the runner releases it; null otherwise. */
  heldUntil?: Date | null;
  holdReason?: HoldReason | null;
  /** Skipped `throttled`: the cap that stopped it (`sms 3/1h`). */
  throttledBy?: string | null;
  /** The line went into this digest (one per channel, contact ''). */
  digestId?: string | null;
}

/** One notification. */
export interface NotificationRecord {
  id: string;
  /** The caller the idempotency key belongs to (and who may read it). */
  scope: string;
  /** Null for a topic notification. */
  userId: string | null;
  /** Set on a topic notification and on each notification it created. */
  topic: string | null;
  /** The topic notification this one was created by. */
  parentId: string | null;
  category: string;
  priority: NotifyPriority;
  idempotencyKey: string | null;
  /** sha256 of the request's canonical JSON: the same key with another request is ALREADY_EXISTS. */
  requestHash: string;
  status: NotificationStatus;
  /** When a scheduled notification fans out (kept after it did); null when sent at once. */
  sendAt: Date | null;
  /** Topic notifications: subscribers counted when the fan-out started, and users done. */
  usersTotal: number;
  usersDone: number;
  /** The fan-out, in channel order (empty until fanned out, and on topic notifications). */
  channels: ChannelLine[];
  createdAt: Date;
  updatedAt: Date;
}

/** A notification to record. */
export type NewNotification = Omit<
  NotificationRecord,
  'channels' | 'usersTotal' | 'usersDone' | 'updatedAt' | 'sendAt'
> & {
  /** Set with status `scheduled`: the notification is due then (its request is kept until it goes). */
  sendAt?: Date | null;
};

/** One channel's override of a Notify call. */
export interface ChannelOverride {
  channel: NotifyChannel;
  skip: boolean;
  /** '' for none. */
  backend: string;
  /** Liquid parts replacing the template's. */
  content?: TemplateContent;
}

/** What a topic job needs to render each member's notification (kept until the job ends). */
export interface TopicRequest {
  data: Record<string, unknown>;
  overrides: ChannelOverride[];
}

/** A durable topic fan-out, as a runner holds it under its lease. */
export interface TopicJob {
  notification: NotificationRecord;
  topic: string;
  request: TopicRequest;
  /** The directory's page token after the last page done; null before the first. */
  cursor: string | null;
  /** The subscribers were counted (users_total set). */
  counted: boolean;
}

/** A user notification's due work, as the runner holds it under its lease (notify/schedule/). */
export interface DueNotification {
  /** `send`: a scheduled notification now due (status fanning_out); `release`: held lines now due. */
  kind: 'send' | 'release';
  notification: NotificationRecord;
  /** The request kept until nothing of the notification waits any more. */
  request: TopicRequest;
}

/** Position in a user's newest-first listing. */
export interface NotificationPageKey {
  createdAt: string;
  id: string;
}
