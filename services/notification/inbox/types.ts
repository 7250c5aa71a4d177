/**
 * The inbox domain's records and the InboxService contract.
 *
 * Shared by the inbox implementation (stores, service, event hub), the gRPC/Connect layer
 * (services/notification/rpc) and the admin gateway (services/notification/admin). No generated
 * protobuf types here: `rpc/` translates between these records and wire messages.
 */

/** The action hook fired by InboxService.send (spec: constant INBOX_SENT_HOOK). */
export const INBOX_SENT_HOOK = 'notification.inbox.sent';

/** One in-app notification of one user. */
export interface InboxMessage {
  /** UUID. */
  id: string;
  userId: string;
  title: string;
  body: string;
  /** A JSON object supplied by the sender. */
  metadata: Record<string, unknown>;
  /** Null while unread. */
  readAt: Date | null;
  createdAt: Date;
}

/** What happened in a user's inbox, in the order it happened. */
export type InboxEventType = 'sent' | 'read' | 'all_read' | 'deleted' | 'cleared';

/**
 * What a watch delivers: the stored events, plus two that only streams carry (never stored):
 * `live`, the first event of a watch opened without a cursor (its cursor is where the watch starts,
 * so a reconnect before any other event resumes without loss), and `reset`, sent when the events
 * after the requested cursor are no longer kept (retention): reload the inbox, then carry on from the
 * reset's cursor.
 */
export type InboxStreamEventType = InboxEventType | 'live' | 'reset';

/** An inbox event as delivered to WatchInbox, SSE and in-process subscribers. */
export interface InboxEvent {
  /** Opaque, strictly increasing per user: resume after it to get exactly what came later. */
  cursor: string;
  type: InboxStreamEventType;
  userId: string;
  /** The message, for `sent`; absent once the message was deleted or cleared (erased). */
  message?: InboxMessage;
  /** The affected message id, for `sent`, `read` and `deleted`. */
  messageId?: string;
  /** The user's unread count right after the event (for `live` and `reset`: when it was sent). */
  unreadCount: number;
  occurredAt: Date;
}

/** Payload of INBOX_SENT_HOOK for in-process listeners. */
export interface InboxSentPayload {
  message: InboxMessage;
  userId: string;
  title: string;
  body: string;
}

export interface SendInput {
  userId: string;
  title: string;
  body: string;
  metadata?: Record<string, unknown>;
}

export interface GetInboxOptions {
  /** Capped at inbox.max_page_size; 0 or unset means the maximum. */
  pageSize?: number;
  /** Opaque token from a previous page's nextPageToken. */
  pageToken?: string;
  unreadOnly?: boolean;
}

export interface InboxPage {
  /** Newest first. */
  messages: InboxMessage[];
  /** Exact unread count of the user (not capped, not filtered by the page). */
  unreadCount: number;
  /** Empty when there is no further page. */
  nextPageToken: string;
}

export interface WatchOptions {
  /** Resume after this cursor: missed events are replayed first, with no gap and no duplicate. */
  after?: string;
  /** Ends the stream when aborted. */
  signal?: AbortSignal;
  /**
   * Called once the watch is live (after any replay): every event from then on will be delivered.
   * A client that loads a snapshot after this moment can't miss an event between the two.
   */
  onLive?: () => void;
  /**
   * Who is watching, for the per-user cap (inbox.max_watchers_per_user counts each party apart).
   * Unset: the user's own sessions (the admin page); the RPC layer names each API caller, so no
   * caller can use up the places of the user's own page or of another caller.
   */
  party?: string;
}

/**
 * The inbox operations of spec/notification-delivery.md. Every operation is scoped to `userId`: a
 * message of another user is NOT_FOUND, exactly like a message that does not exist.
 */
export interface InboxServiceContract {
  send(input: SendInput): Promise<InboxMessage>;
  getInbox(userId: string, options?: GetInboxOptions): Promise<InboxPage>;
  /** Marking an already-read message is harmless. Throws NotFoundError for unknown/foreign ids. */
  markRead(userId: string, messageId: string): Promise<{ unreadCount: number }>;
  markAllRead(userId: string): Promise<{ updated: number; unreadCount: number }>;
  /** Throws NotFoundError for unknown/foreign ids. */
  delete(userId: string, messageId: string): Promise<{ unreadCount: number }>;
  countUnread(userId: string): Promise<number>;
  clearAll(userId: string): Promise<{ deleted: number }>;
  /**
   * Live events of one user. Throws ResourceExhaustedError at once when the watcher caps are reached.
   * The iterator throws ResourceExhaustedError when the subscriber stops reading while its bounded
   * buffer is full; the caller resumes with the last cursor it saw.
   */
  watch(userId: string, options?: WatchOptions): AsyncIterable<InboxEvent>;
}
