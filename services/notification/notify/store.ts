/**
 * NotificationStore: where notifications, their fan-out lines and the topic jobs live; implemented
 * by InMemoryNotificationStore and DatabaseNotificationStore (knex: PostgreSQL or PGlite). Stores
 * trust their input: validation and ids belong to the Notifier. Leases of topic jobs run on the
 * store's clock (the database's `now()`), never a replica's.
 */
import type {
  ChannelLine,
  DueNotification,
  NewNotification,
  NotificationPageKey,
  NotificationRecord,
  TopicJob,
  TopicRequest,
} from './types';

/** One page of a user's notifications, newest first. */
export interface NotificationPage {
  records: NotificationRecord[];
  /** Null on the last page. */
  nextKey: NotificationPageKey | null;
}

/** An operator's listing filter (the console's activity feed); every field narrows it. */
export interface NotificationFilter {
  userId?: string;
  category?: string;
  status?: NotificationRecord['status'];
}

/** A member's notification a topic page creates. */
export type NewChild = NewNotification & { userId: string; parentId: string };

/** One notification's fan-out to save (`saveFanOuts`). */
export interface FanOutResult {
  id: string;
  lines: readonly ChannelLine[];
  /** Kept when a line is held. */
  request?: TopicRequest;
}

/** Storage of notifications. */
export interface NotificationStore {
  /**
   * Records a notification (status as given, no lines). When `(scope, idempotencyKey)` is taken,
   * records nothing and returns the existing one with `created: false`. A topic notification
   * (`topic` set, no parent) gets its job row, with `request`, in the same commit (with `sendAt`: the
   * job is not claimed before then). A scheduled user notification (status `scheduled`, `sendAt`)
   * keeps `request` and is due at `sendAt` (`claimDue`).
   */
  create(
    n: NewNotification,
    request?: TopicRequest,
  ): Promise<{ record: NotificationRecord; created: boolean }>;
  /** The notification of a caller's key, or null. */
  findByKey(scope: string, idempotencyKey: string): Promise<NotificationRecord | null>;
  get(id: string): Promise<NotificationRecord | null>;
  /** `userId`'s notifications of `scope`, newest first, after `after`. */
  list(scope: string, userId: string, limit: number, after?: NotificationPageKey): Promise<NotificationPage>;
  /** Every caller's notifications under `filter`, newest first, after `after` (operators only). */
  listAll(filter: NotificationFilter, limit: number, after?: NotificationPageKey): Promise<NotificationPage>;
  /** The notification one of whose lines holds `messageId` (a delivery or inbox message id), or null. */
  findByMessageId(messageId: string): Promise<NotificationRecord | null>;
  /**
   * Replaces the lines of a notification and marks it fanned out. When a line is held
   * (`heldUntil`), `request` is kept and the notification is due at the earliest `heldUntil`.
   */
  saveFanOut(id: string, lines: readonly ChannelLine[], request?: TopicRequest): Promise<void>;
  /**
   * `saveFanOut` of several notifications in ONE commit (a topic page's members: a few statements
   * for the whole group instead of a few per member). Rows are locked in id order (one lock order
   * with cancel and finishDue: no deadlock). Unknown ids are left alone.
   */
  saveFanOuts(entries: readonly FanOutResult[]): Promise<void>;
  /**
   * Retention: deletes up to `limit` notifications created before `before`, oldest first (their lines
   * and topic members with them), except topic notifications whose fan-out has not finished and
   * notifications still due (scheduled, or with held lines); returns how many.
   */
  purgeBefore(before: Date, limit: number): Promise<number>;
  /** Deletes every notification of the user (DeleteUser); returns how many. */
  eraseUser(userId: string): Promise<number>;

  // --- Due work (notify/schedule/): scheduled user notifications and held lines

  /**
   * Leases up to `limit` user notifications whose due time passed (the store's clock) and whose
   * lease is free or expired, earliest first, to `owner` for `leaseMs`: a scheduled one becomes
   * fanning out (kind `send`, in the same statement that checks it is still scheduled, so a cancel
   * either came first or finds it going); a fanned-out one with held lines is kind `release`.
   */
  claimDue(owner: string, leaseMs: number, limit: number): Promise<DueNotification[]>;
  /**
   * Saves the lines of due work `owner` holds (replacing all lines), marks it fanned out and gives the
   * lease up; still due at the earliest held line, if any (the request kept), else done (the request
   * dropped). False (nothing written) when the lease was lost.
   */
  finishDue(id: string, owner: string, lines: readonly ChannelLine[]): Promise<boolean>;
  /** Gives `owner`'s lease of due work up (a stopping runner). */
  releaseDue(id: string, owner: string): Promise<void>;
  /**
   * CancelNotification's part in the store, in one commit: unless a runner holds the notification
   * under a live lease (it is going), a scheduled notification becomes cancelled (counted 1, never
   * claimed afterwards), held lines become skipped `cancelled` (each counted), and so do the digested
   * lines not yet sent of `digestIds`. `going`: a runner holds it (nothing was taken back). Null
   * when unknown. Once it answered with `going` false, nothing of it is due any more (a runner can no
   * longer take it).
   */
  cancel(
    id: string,
    digestIds: readonly string[],
  ): Promise<{ record: NotificationRecord; cancelled: number; going: boolean } | null>;

  // --- Topic jobs (notify/topic-fan-out.ts)

  /**
   * Leases the oldest unfinished job whose lease is free or expired (and whose `sendAt`, if any,
   * passed) to `owner` for `leaseMs`, and marks its notification fanning out; null when there is none.
   * A job whose notification was cancelled is finished instead, never returned.
   */
  claimTopicJob(owner: string, leaseMs: number): Promise<TopicJob | null>;
  /** Extends `owner`'s lease; false when it was lost. */
  renewTopicJob(id: string, owner: string, leaseMs: number): Promise<boolean>;
  /** Sets users_total (once); false when the lease was lost. */
  setTopicTotal(id: string, owner: string, total: number): Promise<boolean>;
  /**
   * In ONE commit: creates the page's member notifications (status accepted; a (parent, user) that
   * exists is left as it is), adds `done` to users_done and moves the cursor. False (and nothing
   * written) when `owner` lost the lease.
   */
  addTopicPage(
    id: string,
    owner: string,
    children: readonly NewChild[],
    done: number,
    cursor: string | null,
  ): Promise<boolean>;
  /** Member notifications of `parentId` not fanned out yet (status accepted), oldest first. */
  pendingChildren(parentId: string, limit: number): Promise<NotificationRecord[]>;
  /** Gives `owner`'s lease up (a stopping runner), so another replica takes the job at once. */
  releaseTopicJob(id: string, owner: string): Promise<void>;
  /** Ends the job: its request is dropped and the notification is fanned out. False when the lease was lost. */
  finishTopicJob(id: string, owner: string): Promise<boolean>;
}
