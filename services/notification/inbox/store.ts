/**
 * InboxStoreProtocol: what InboxService and the event hub need from a store, implemented by
 * DatabaseInboxStore (knex) and InMemoryInboxStore. Stores trust their input: validation, ids and
 * clocks belong to InboxService.
 */
import type { InboxEventType, InboxMessage } from './types';

/** A message to store: the service has already validated it and chosen its id and time. */
export interface NewInboxMessage {
  id: string;
  userId: string;
  title: string;
  body: string;
  metadata: Record<string, unknown>;
  createdAt: Date;
}

/** Position in a user's newest-first message list: the last row of the previous page. */
export interface PageKey {
  /** ISO-8601 UTC creation time at the store's full precision (microseconds in PostgreSQL). */
  createdAt: string;
  /** Lower-case UUID. */
  id: string;
}

/** One page query of one user's messages, newest first. */
export interface MessagePageQuery {
  userId: string;
  limit: number;
  after?: PageKey;
  unreadOnly: boolean;
}

/** A page of messages and where the next one starts (null when there is none). */
export interface MessagePage {
  messages: InboxMessage[];
  nextKey: PageKey | null;
}

/** One row of a user's event log. `seq` increases strictly, and commits in order, per user. */
export interface StoredInboxEvent {
  seq: number;
  type: InboxEventType;
  userId: string;
  messageId: string | null;
  /** The message, for `sent`; null once the message was deleted or cleared (erased). */
  message: InboxMessage | null;
  unreadCount: number;
  occurredAt: Date;
}

/** Called after a mutation commits, with the user and the event's seq (same process only). */
export type CommittedListener = (userId: string, seq: number) => void;

/** What a mutation of one message did. */
export interface MessageMutationResult {
  /** False when the message does not exist or belongs to another user. */
  found: boolean;
  unreadCount: number;
}

/** Storage of inbox messages and their per-user event log. */
export interface InboxStoreProtocol {
  /** `database` or `memory`, for health details and logs. */
  readonly backend: 'database' | 'memory';
  /** Stores a message and its `sent` event in one transaction. */
  send(message: NewInboxMessage): Promise<{ message: InboxMessage; event: StoredInboxEvent }>;
  listMessages(query: MessagePageQuery): Promise<MessagePage>;
  countUnread(userId: string): Promise<number>;
  /** Sets read_at when unread (a `read` event); already read: found, nothing changes. */
  markRead(userId: string, messageId: string, at: Date): Promise<MessageMutationResult>;
  /** Marks every unread message read; one `all_read` event when any changed. */
  markAllRead(userId: string, at: Date): Promise<{ updated: number; unreadCount: number }>;
  /** Deletes the message and erases its content from its `sent` event, in one transaction. */
  deleteMessage(userId: string, messageId: string, at: Date): Promise<MessageMutationResult>;
  /**
   * Deletes every message of the user and erases their content from the event log; one `cleared`
   * event when any were deleted.
   */
  clearAll(userId: string, at: Date): Promise<{ deleted: number }>;
  /** The user's events with seq > afterSeq, oldest first, at most `limit`. */
  eventsAfter(userId: string, afterSeq: number, limit: number): Promise<StoredInboxEvent[]>;
  /** The user's newest event seq, kept or purged (so never below purgedThrough), 0 when none. */
  latestSeq(userId: string): Promise<number>;
  /**
   * The highest seq of this user's events the purge has deleted, 0 when none: a cursor below it may
   * have lost events, so its watcher gets a `reset`.
   */
  purgedThrough(userId: string): Promise<number>;
  /**
   * Deletes up to `limit` messages and up to `limit` events created before `cutoff`, remembering per
   * user the highest event seq deleted (purgedThrough); returns rows deleted.
   */
  purgeBatch(cutoff: Date, limit: number): Promise<{ messages: number; events: number }>;
  /**
   * Runs `fn` unless another holder (any replica) is running job `job`, or it last ran less than
   * `minIntervalMs` before `now`. Returns whether `fn` ran.
   */
  runMaintenance(job: string, now: Date, minIntervalMs: number, fn: () => Promise<void>): Promise<boolean>;
  /** A cheap round trip, for the health check. */
  ping(): Promise<void>;
  /** Subscribes to this process's commits; returns the unsubscribe function. */
  onCommitted(listener: CommittedListener): () => void;
}

/** Fans a commit out to listeners; a throwing listener is reported, never propagated to the writer. */
export class CommitNotifier {
  private readonly listeners = new Set<CommittedListener>();

  constructor(private readonly onListenerError: (err: unknown) => void) {}

  /** Adds a listener; returns its removal. */
  add(listener: CommittedListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Tells every listener about a committed event. */
  emit(userId: string, seq: number): void {
    for (const listener of this.listeners) {
      try {
        listener(userId, seq);
      } catch (err) {
        this.onListenerError(err);
      }
    }
  }
}
