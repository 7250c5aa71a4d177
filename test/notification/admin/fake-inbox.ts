/**
 * TEST DOUBLE: an in-memory InboxServiceContract for the admin gateway tests, written while the real
 * InboxService was being built in parallel. It keeps the contract's observable rules (newest first,
 * user scoping with NOT_FOUND for foreign ids, opaque page tokens, per-user strictly increasing
 * cursors, replay-then-live watch with a bounded buffer) and nothing else. Replace it with the real
 * InboxService (memory store) once merged.
 */
import { randomUUID } from 'node:crypto';
import { InvalidArgumentError, NotFoundError, ResourceExhaustedError } from '../../../shared/errors';
import type {
  GetInboxOptions,
  InboxEvent,
  InboxMessage,
  InboxPage,
  InboxServiceContract,
  SendInput,
  WatchOptions,
} from '../../../services/notification/inbox/types';

interface Subscriber {
  userId: string;
  queue: InboxEvent[];
  wake: (() => void) | undefined;
  overflowed: boolean;
}

/** In-memory inbox with a simple event fan-out, for tests only. */
export class FakeInbox implements InboxServiceContract {
  private readonly messages: InboxMessage[] = [];
  private readonly events = new Map<string, InboxEvent[]>();
  private readonly subscribers = new Set<Subscriber>();
  private sequence = 0;
  private clockMs = Date.parse('2030-01-01T00:00:00Z');
  /** Watches that ended because their signal was aborted. */
  abortedWatches = 0;

  constructor(
    private readonly maxPageSize = 50,
    private readonly watchBufferSize = 100,
  ) {}

  /** Number of watch() iterators currently open. */
  get activeWatches(): number {
    return this.subscribers.size;
  }

  async send(input: SendInput): Promise<InboxMessage> {
    // A private clock: one millisecond per message, so "newest first" is unambiguous.
    this.clockMs += 1;
    const message: InboxMessage = {
      id: randomUUID(),
      userId: input.userId,
      title: input.title,
      body: input.body,
      metadata: input.metadata ?? {},
      readAt: null,
      createdAt: new Date(this.clockMs),
    };
    this.messages.push(message);
    this.publish(input.userId, 'sent', { message: { ...message } });
    return { ...message };
  }

  async getInbox(userId: string, options: GetInboxOptions = {}): Promise<InboxPage> {
    const size = Math.min(options.pageSize || this.maxPageSize, this.maxPageSize);
    const offset = options.pageToken ? decodeToken(options.pageToken) : 0;
    const mine = this.mine(userId)
      .filter((m) => !options.unreadOnly || m.readAt === null)
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
    const messages = mine.slice(offset, offset + size).map((m) => ({ ...m }));
    const next = offset + size < mine.length ? encodeToken(offset + size) : '';
    return { messages, unreadCount: this.unread(userId), nextPageToken: next };
  }

  async markRead(userId: string, messageId: string): Promise<{ unreadCount: number }> {
    const message = this.find(userId, messageId);
    if (message.readAt === null) {
      message.readAt = new Date(this.clockMs);
      this.publish(userId, 'read', { messageId });
    }
    return { unreadCount: this.unread(userId) };
  }

  async markAllRead(userId: string): Promise<{ updated: number; unreadCount: number }> {
    let updated = 0;
    for (const message of this.mine(userId)) {
      if (message.readAt === null) {
        message.readAt = new Date(this.clockMs);
        updated += 1;
      }
    }
    if (updated > 0) this.publish(userId, 'all_read', {});
    return { updated, unreadCount: 0 };
  }

  async delete(userId: string, messageId: string): Promise<{ unreadCount: number }> {
    const message = this.find(userId, messageId);
    this.messages.splice(this.messages.indexOf(message), 1);
    this.publish(userId, 'deleted', { messageId });
    return { unreadCount: this.unread(userId) };
  }

  async countUnread(userId: string): Promise<number> {
    return this.unread(userId);
  }

  async clearAll(userId: string): Promise<{ deleted: number }> {
    const mine = this.mine(userId);
    for (const message of mine) this.messages.splice(this.messages.indexOf(message), 1);
    this.publish(userId, 'cleared', {});
    return { deleted: mine.length };
  }

  async *watch(userId: string, options: WatchOptions = {}): AsyncIterable<InboxEvent> {
    const after = options.after === undefined ? undefined : decodeCursor(options.after);
    const subscriber: Subscriber = { userId, queue: [], wake: undefined, overflowed: false };
    const signal = options.signal;
    const onAbort = (): void => subscriber.wake?.();
    this.subscribers.add(subscriber);
    signal?.addEventListener('abort', onAbort);
    try {
      if (after !== undefined) {
        subscriber.queue.push(
          ...(this.events.get(userId) ?? []).filter((e) => decodeCursor(e.cursor) > after),
        );
      }
      for (;;) {
        if (signal?.aborted) {
          this.abortedWatches += 1;
          return;
        }
        if (subscriber.overflowed) throw new ResourceExhaustedError('inbox watcher fell behind');
        const next = subscriber.queue.shift();
        if (next) {
          yield next;
          continue;
        }
        await new Promise<void>((resolve) => (subscriber.wake = resolve));
        subscriber.wake = undefined;
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.subscribers.delete(subscriber);
    }
  }

  private publish(userId: string, type: InboxEvent['type'], extra: Partial<InboxEvent>): void {
    this.sequence += 1;
    const event: InboxEvent = {
      cursor: encodeCursor(this.sequence),
      type,
      userId,
      unreadCount: this.unread(userId),
      occurredAt: new Date(this.clockMs),
      ...extra,
    };
    const log = this.events.get(userId) ?? [];
    log.push(event);
    this.events.set(userId, log);
    for (const subscriber of this.subscribers) {
      if (subscriber.userId !== userId) continue;
      if (subscriber.queue.length >= this.watchBufferSize) subscriber.overflowed = true;
      else subscriber.queue.push(event);
      subscriber.wake?.();
    }
  }

  private mine(userId: string): InboxMessage[] {
    return this.messages.filter((m) => m.userId === userId);
  }

  private unread(userId: string): number {
    return this.mine(userId).filter((m) => m.readAt === null).length;
  }

  private find(userId: string, messageId: string): InboxMessage {
    const message = this.messages.find((m) => m.id === messageId && m.userId === userId);
    if (!message) throw new NotFoundError(`message ${messageId} not found`);
    return message;
  }
}

function encodeCursor(sequence: number): string {
  return `c${sequence.toString().padStart(12, '0')}`;
}

function decodeCursor(cursor: string): number {
  if (!/^c[0-9]{12}$/.test(cursor)) throw new InvalidArgumentError('cursor is malformed', 'after');
  return Number(cursor.slice(1));
}

function encodeToken(offset: number): string {
  return Buffer.from(JSON.stringify({ o: offset })).toString('base64url');
}

function decodeToken(token: string): number {
  try {
    const { o } = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { o: unknown };
    if (typeof o === 'number' && Number.isInteger(o) && o >= 0) return o;
  } catch {
    // fall through
  }
  throw new InvalidArgumentError('page token is malformed', 'page_token');
}
