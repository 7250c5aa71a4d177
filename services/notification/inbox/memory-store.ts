/**
 * InMemoryInboxStore: the `memory` store backend, for tests and throwaway runs. Same semantics as
 * DatabaseInboxStore, in one process; nothing survives a restart, but a client's cursor does: the
 * event log starts past every seq an earlier process handed out (`epochFirstSeq`), and everything
 * before that is the horizon of every user, so a cursor kept across a restart gets a reset instead
 * of skipping the new process's events numbered below it.
 */
import type { Logger } from '../../../shared/logging/logger';
import { type Clock, systemClock } from '../../../shared/runtime/clock';
import { silentLogger } from '../../../shared/logging/logger';
import { InProcessJobLease } from '../../../shared/storage/periodic-job';
import { epochFirstSeq } from '../../../shared/streams/memory-event-log';
import {
  CommitNotifier,
  type CommittedListener,
  type InboxStoreProtocol,
  type MessageMutationResult,
  type MessagePage,
  type MessagePageQuery,
  type NewInboxMessage,
  type StoredInboxEvent,
} from './store';
import type { InboxEventType, InboxMessage } from './types';

interface UserInbox {
  /** Newest first by (createdAt, id). */
  messages: InboxMessage[];
  events: StoredInboxEvent[];
  /** Highest event seq the purge deleted. */
  purgedThrough: number;
}

function compareNewestFirst(a: { createdAt: Date; id: string }, b: { createdAt: Date; id: string }): number {
  const t = b.createdAt.getTime() - a.createdAt.getTime();
  if (t !== 0) return t;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/**
 * A copy of a message's metadata. Most messages carry none: an empty object is copied as a new empty
 * object, since structuredClone costs about a microsecond even for `{}` and ran three times per Send.
 */
function copyMetadata(metadata: Record<string, unknown>): Record<string, unknown> {
  const empty = Object.getPrototypeOf(metadata) === Object.prototype && Object.keys(metadata).length === 0;
  return empty ? {} : structuredClone(metadata);
}

function copyMessage(m: InboxMessage): InboxMessage {
  return { ...m, metadata: copyMetadata(m.metadata) };
}

/** The in-memory InboxStoreProtocol. */
export class InMemoryInboxStore implements InboxStoreProtocol {
  readonly backend = 'memory' as const;
  private readonly users = new Map<string, UserInbox>();
  private readonly lease = new InProcessJobLease();
  private readonly notifier: CommitNotifier;
  /** The last seq handed out; starts at `before`. */
  private seq: number;
  /** Every seq up to here belongs to an earlier log: the horizon of every user. */
  private readonly before: number;

  /** `clock` (default the system's) dates the log's first seq. */
  constructor(logger: Logger = silentLogger(), options: { clock?: Clock } = {}) {
    const log = logger.child({ component: 'inbox-store', backend: 'memory' });
    this.notifier = new CommitNotifier((err) => log.error({ err }, 'commit listener failed'));
    this.before = epochFirstSeq((options.clock ?? systemClock).now()) - 1;
    this.seq = this.before;
  }

  private user(userId: string): UserInbox {
    let inbox = this.users.get(userId);
    if (!inbox) {
      inbox = { messages: [], events: [], purgedThrough: this.before };
      this.users.set(userId, inbox);
    }
    return inbox;
  }

  private unread(inbox: UserInbox): number {
    let n = 0;
    for (const m of inbox.messages) if (m.readAt === null) n++;
    return n;
  }

  private record(
    userId: string,
    type: InboxEventType,
    at: Date,
    messageId: string | null,
    message: InboxMessage | null,
  ): StoredInboxEvent {
    const inbox = this.user(userId);
    const event: StoredInboxEvent = {
      seq: ++this.seq,
      type,
      userId,
      messageId,
      message: message ? copyMessage(message) : null,
      unreadCount: this.unread(inbox),
      occurredAt: at,
    };
    inbox.events.push(event);
    // Listeners run after the caller's promise settles, like a database commit.
    queueMicrotask(() => this.notifier.emit(userId, event.seq));
    return event;
  }

  async send(input: NewInboxMessage): Promise<{ message: InboxMessage; event: StoredInboxEvent }> {
    const message: InboxMessage = {
      id: input.id,
      userId: input.userId,
      title: input.title,
      body: input.body,
      metadata: copyMetadata(input.metadata),
      readAt: null,
      createdAt: input.createdAt,
    };
    const inbox = this.user(input.userId);
    const at = inbox.messages.findIndex((m) => compareNewestFirst(message, m) < 0);
    if (at === -1) inbox.messages.push(message);
    else inbox.messages.splice(at, 0, message);
    const event = this.record(input.userId, 'sent', input.createdAt, message.id, message);
    // The caller's copy, shared by the answer's message and event: nothing it changes reaches the log.
    const own = copyMessage(message);
    return { message: own, event: { ...event, message: own } };
  }

  async listMessages(query: MessagePageQuery): Promise<MessagePage> {
    const inbox = this.users.get(query.userId);
    if (!inbox) return { messages: [], nextKey: null };
    const after = query.after
      ? { createdAt: new Date(query.after.createdAt), id: query.after.id }
      : undefined;
    const matching: InboxMessage[] = [];
    for (const m of inbox.messages) {
      if (after && compareNewestFirst(after, m) >= 0) continue;
      if (query.unreadOnly && m.readAt !== null) continue;
      matching.push(m);
      if (matching.length > query.limit) break;
    }
    const hasMore = matching.length > query.limit;
    const page = matching.slice(0, query.limit);
    const last = page[page.length - 1];
    return {
      messages: page.map(copyMessage),
      nextKey: hasMore && last ? { createdAt: last.createdAt.toISOString(), id: last.id } : null,
    };
  }

  async countUnread(userId: string): Promise<number> {
    const inbox = this.users.get(userId);
    return inbox ? this.unread(inbox) : 0;
  }

  async markRead(userId: string, messageId: string, at: Date): Promise<MessageMutationResult> {
    const inbox = this.users.get(userId);
    const message = inbox?.messages.find((m) => m.id === messageId);
    if (!inbox || !message) return { found: false, unreadCount: inbox ? this.unread(inbox) : 0 };
    if (message.readAt === null) {
      message.readAt = at;
      this.record(userId, 'read', at, messageId, null);
    }
    return { found: true, unreadCount: this.unread(inbox) };
  }

  async markAllRead(userId: string, at: Date): Promise<{ updated: number; unreadCount: number }> {
    const inbox = this.users.get(userId);
    if (!inbox) return { updated: 0, unreadCount: 0 };
    let updated = 0;
    for (const m of inbox.messages) {
      if (m.readAt === null) {
        m.readAt = at;
        updated++;
      }
    }
    if (updated > 0) this.record(userId, 'all_read', at, null, null);
    return { updated, unreadCount: 0 };
  }

  async deleteMessage(userId: string, messageId: string, at: Date): Promise<MessageMutationResult> {
    const inbox = this.users.get(userId);
    const index = inbox ? inbox.messages.findIndex((m) => m.id === messageId) : -1;
    if (!inbox || index === -1) return { found: false, unreadCount: inbox ? this.unread(inbox) : 0 };
    inbox.messages.splice(index, 1);
    // Erasure: the `sent` event keeps its ids and type, not the content.
    for (const e of inbox.events) if (e.messageId === messageId) e.message = null;
    this.record(userId, 'deleted', at, messageId, null);
    return { found: true, unreadCount: this.unread(inbox) };
  }

  async clearAll(userId: string, at: Date): Promise<{ deleted: number }> {
    const inbox = this.users.get(userId);
    const deleted = inbox ? inbox.messages.length : 0;
    if (inbox && deleted > 0) {
      inbox.messages = [];
      for (const e of inbox.events) e.message = null;
      this.record(userId, 'cleared', at, null, null);
    }
    return { deleted };
  }

  async eventsAfter(userId: string, afterSeq: number, limit: number): Promise<StoredInboxEvent[]> {
    const events = this.users.get(userId)?.events ?? [];
    const out: StoredInboxEvent[] = [];
    for (const e of events) {
      if (e.seq <= afterSeq) continue;
      out.push({ ...e, message: e.message ? copyMessage(e.message) : null });
      if (out.length >= limit) break;
    }
    return out;
  }

  async latestSeq(userId: string): Promise<number> {
    const inbox = this.users.get(userId);
    if (!inbox) return this.before;
    const events = inbox.events;
    return Math.max(inbox.purgedThrough, events.length > 0 ? events[events.length - 1]!.seq : 0);
  }

  async purgedThrough(userId: string): Promise<number> {
    return this.users.get(userId)?.purgedThrough ?? this.before;
  }

  async purgeBatch(cutoff: Date, limit: number): Promise<{ messages: number; events: number }> {
    let messages = 0;
    let events = 0;
    const t = cutoff.getTime();
    for (const [userId, inbox] of this.users) {
      if (messages < limit) {
        const keep: InboxMessage[] = [];
        for (const m of inbox.messages) {
          if (m.createdAt.getTime() < t && messages < limit) {
            messages++;
            continue;
          }
          keep.push(m);
        }
        inbox.messages = keep;
      }
      if (events < limit) {
        const keep: StoredInboxEvent[] = [];
        for (const e of inbox.events) {
          if (e.occurredAt.getTime() < t && events < limit) {
            events++;
            inbox.purgedThrough = Math.max(inbox.purgedThrough, e.seq);
            continue;
          }
          keep.push(e);
        }
        inbox.events = keep;
      }
      // An emptied inbox keeps its purge horizon, so an old cursor still gets its reset.
      if (inbox.messages.length === 0 && inbox.events.length === 0 && inbox.purgedThrough === this.before)
        this.users.delete(userId);
    }
    return { messages, events };
  }

  runMaintenance(job: string, now: Date, minIntervalMs: number, fn: () => Promise<void>): Promise<boolean> {
    return this.lease.runIfDue(job, now, minIntervalMs, fn);
  }

  async ping(): Promise<void> {}

  onCommitted(listener: CommittedListener): () => void {
    return this.notifier.add(listener);
  }
}
