/**
 * InboxService: the inbox operations of the spec over an InboxStoreProtocol, with validation, the
 * opaque page token, the INBOX_SENT_HOOK for in-process listeners and live events through InboxHub.
 */
import { isUuid, newId } from '../../../shared/runtime/ids';
import { pageSize } from '../../../shared/storage/page-size';
import { InvalidArgumentError, NotFoundError } from '../../../shared/errors';
import { hasUnstorableText } from '../../../shared/text/cut';
import { checkText } from '../../../shared/text/check';
import type { Logger } from '../../../shared/logging/logger';
import { silentLogger } from '../../../shared/logging/logger';
import type { InboxConfig } from './config';
import type { InboxHub } from './inbox-hub';
import { decodePageToken, encodePageToken } from './page-token';
import type { InboxStoreProtocol } from './store';
import {
  INBOX_SENT_HOOK,
  type GetInboxOptions,
  type InboxEvent,
  type InboxMessage,
  type InboxPage,
  type InboxSentPayload,
  type InboxServiceContract,
  type SendInput,
  type WatchOptions,
} from './types';
import { type Clock, dateReader } from '../../../shared/runtime/clock';

/** Longest user id accepted (it travels in NOTIFY payloads, which PostgreSQL caps at 8000 bytes). */
export const MAX_USER_ID_LENGTH = 256;

/** An in-process listener of INBOX_SENT_HOOK; its failures are logged, never seen by the sender. */
export type InboxSentListener = (payload: InboxSentPayload) => void | Promise<void>;

/** Dependencies of InboxService. */
export interface InboxServiceOptions {
  store: InboxStoreProtocol;
  hub: InboxHub;
  config: Pick<InboxConfig, 'max_page_size' | 'max_title_length' | 'max_body_length' | 'max_metadata_bytes'>;
  logger?: Logger;
  /** The time of new messages and events (tests inject one). */
  clock?: Clock;
}

/** The one message for an unknown or foreign message id, so the two cannot be told apart. */
const MESSAGE_NOT_FOUND = 'inbox message not found';

/** A message's title or body: free text (line breaks allowed), at most `max` code points, storable. */
function checkMessageText(field: string, value: unknown, max: number, required: boolean): string {
  return checkText(value, field, { max, required: required ? 'non_blank' : undefined, controls: 'allow' });
}

function checkUserId(userId: unknown): string {
  return checkText(userId, 'user_id', { max: MAX_USER_ID_LENGTH, required: 'non_blank' });
}

function checkMessageId(messageId: unknown): string {
  if (typeof messageId !== 'string' || !isUuid(messageId)) {
    throw new InvalidArgumentError('message_id must be a UUID', 'message_id');
  }
  return messageId.toLowerCase();
}

/** The inbox operations (spec: InboxService), every one scoped to one user. */
export class InboxService implements InboxServiceContract {
  private readonly store: InboxStoreProtocol;
  private readonly hub: InboxHub;
  private readonly config: InboxServiceOptions['config'];
  private readonly log: Logger;
  private readonly clock: () => Date;
  private readonly sentListeners = new Set<InboxSentListener>();

  constructor(options: InboxServiceOptions) {
    this.store = options.store;
    this.hub = options.hub;
    this.config = options.config;
    this.log = (options.logger ?? silentLogger()).child({ component: 'inbox' });
    this.clock = dateReader(options.clock);
  }

  /** Subscribes to INBOX_SENT_HOOK; returns the unsubscribe function. */
  onInboxSent(listener: InboxSentListener): () => void {
    this.sentListeners.add(listener);
    return () => this.sentListeners.delete(listener);
  }

  async send(input: SendInput): Promise<InboxMessage> {
    const userId = checkUserId(input?.userId);
    const title = checkMessageText('title', input.title, this.config.max_title_length, true);
    const body = checkMessageText('body', input.body, this.config.max_body_length, false);
    const metadata = this.checkMetadata(input.metadata);
    const { message } = await this.store.send({
      id: newId(),
      userId,
      title,
      body,
      metadata,
      createdAt: this.clock(),
    });
    this.fireSent({ message, userId, title, body });
    return message;
  }

  private checkMetadata(metadata: unknown): Record<string, unknown> {
    if (metadata === undefined || metadata === null) return {};
    if (typeof metadata !== 'object' || Array.isArray(metadata)) {
      throw new InvalidArgumentError('metadata must be a JSON object', 'metadata');
    }
    let json: string;
    try {
      json = JSON.stringify(metadata);
    } catch {
      throw new InvalidArgumentError('metadata must be a JSON object', 'metadata');
    }
    if (Buffer.byteLength(json, 'utf8') > this.config.max_metadata_bytes) {
      throw new InvalidArgumentError(
        `metadata is larger than ${this.config.max_metadata_bytes} bytes`,
        'metadata',
      );
    }
    // PostgreSQL's jsonb cannot hold NUL nor a lone surrogate (Connect JSON can carry `"\ud800"` in
    // a Struct): refuse them here, for both stores alike, instead of failing the insert (INTERNAL).
    if (hasUnstorableText(json)) {
      throw new InvalidArgumentError('metadata must not contain NUL characters or broken text', 'metadata');
    }
    // A JSON round trip, so both stores keep exactly what a database would.
    return JSON.parse(json) as Record<string, unknown>;
  }

  private fireSent(payload: InboxSentPayload): void {
    for (const listener of this.sentListeners) {
      try {
        const result = listener(payload);
        if (result && typeof (result as Promise<void>).then === 'function') {
          (result as Promise<void>).catch((err: unknown) =>
            this.log.error(
              { err, hook: INBOX_SENT_HOOK, messageId: payload.message.id },
              'inbox hook listener failed',
            ),
          );
        }
      } catch (err) {
        this.log.error(
          { err, hook: INBOX_SENT_HOOK, messageId: payload.message.id },
          'inbox hook listener failed',
        );
      }
    }
  }

  async getInbox(userId: string, options: GetInboxOptions = {}): Promise<InboxPage> {
    const user = checkUserId(userId);
    const max = this.config.max_page_size;
    const limit = pageSize(options.pageSize, { default: max, max });
    const after = options.pageToken ? decodePageToken(user, options.pageToken) : undefined;
    const [page, unreadCount] = await Promise.all([
      this.store.listMessages({ userId: user, limit, after, unreadOnly: options.unreadOnly === true }),
      this.store.countUnread(user),
    ]);
    return {
      messages: page.messages,
      unreadCount,
      nextPageToken: page.nextKey ? encodePageToken(user, page.nextKey) : '',
    };
  }

  async markRead(userId: string, messageId: string): Promise<{ unreadCount: number }> {
    const user = checkUserId(userId);
    const id = checkMessageId(messageId);
    const result = await this.store.markRead(user, id, this.clock());
    if (!result.found) throw new NotFoundError(MESSAGE_NOT_FOUND);
    return { unreadCount: result.unreadCount };
  }

  async markAllRead(userId: string): Promise<{ updated: number; unreadCount: number }> {
    return this.store.markAllRead(checkUserId(userId), this.clock());
  }

  async delete(userId: string, messageId: string): Promise<{ unreadCount: number }> {
    const user = checkUserId(userId);
    const id = checkMessageId(messageId);
    const result = await this.store.deleteMessage(user, id, this.clock());
    if (!result.found) throw new NotFoundError(MESSAGE_NOT_FOUND);
    return { unreadCount: result.unreadCount };
  }

  async countUnread(userId: string): Promise<number> {
    return this.store.countUnread(checkUserId(userId));
  }

  async clearAll(userId: string): Promise<{ deleted: number }> {
    return this.store.clearAll(checkUserId(userId), this.clock());
  }

  watch(userId: string, options?: WatchOptions): AsyncIterable<InboxEvent> {
    return this.hub.watch(checkUserId(userId), options);
  }
}
