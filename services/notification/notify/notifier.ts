/**
 * `Notifier`: the notify area's domain service behind NotifyService. `notify` validates the call,
 * applies the caller's idempotency key, renders every channel FIRST (strict: nothing is recorded or
 * sent when a variable is missing), records the notification and fans it out (fan-out.ts); for a
 * topic it records the topic notification and its durable job and answers at once (the
 * TopicFanOut runner does the rest). `get` shows each delivery's current status; `list` pages a
 * user's notifications newest first.
 */
import { createHash } from 'node:crypto';
import { AlreadyExistsError, InvalidArgumentError, NotFoundError } from '../../../shared/errors';
import type { Logger } from '../../../shared/logging/logger';
import { silentLogger } from '../../../shared/logging/logger';
import { type Clock, systemClock } from '../../../shared/runtime/clock';
import { isUuid, newId } from '../../../shared/runtime/ids';
import { isDomainError } from '../../../shared/errors';
import { decodeKeysetToken, encodeKeysetToken } from '../../../shared/storage/keyset-token';
import { pageSize as resolvePageSize } from '../../../shared/storage/page-size';
import { cutText, hasUnstorableText } from '../../../shared/text/cut';
import { checkText } from '../../../shared/text/check';
import { canonicalJson } from '../delivery/content-hash';
import type { DeliveryStatus } from '../delivery/driver';
import type { DeliveryPipeline } from '../delivery/pipeline';
import type { User, UserDirectory } from '../users/types';
import { checkTopic } from '../users/validation';
import { type CategoryConfig, NOTIFY_CHANNELS, type NotifyConfig } from './config';
import { contactsOf, FanOut, type FanOutOptions, lineError, templateUser } from './fan-out';
import type { NotificationFilter, NotificationStore } from './store';
import type { DigestBook, DueDigest } from './timing';
import type {
  ChannelLine,
  ChannelOverride,
  DueNotification,
  NotificationRecord,
  NotifyPriority,
  TopicRequest,
} from './types';

/** One Notify call, as the domain sees it ('' for unset strings). */
export interface NotifyInput {
  userId: string;
  topic: string;
  category: string;
  data: Record<string, unknown>;
  overrides: ChannelOverride[];
  priority: NotifyPriority;
  idempotencyKey: string;
  /** When to send (at most one of `sendAt` and `delayMs`); a time not in the future sends now. */
  sendAt?: Date | null;
  /** How long to wait before sending (milliseconds, not negative). */
  delayMs?: number | null;
}

/** The answer of CancelNotification. */
export interface CancelResult {
  notification: NotificationView;
  /** Lines (or the whole scheduled notification, as 1) this call cancelled. */
  cancelled: number;
}

/** A fan-out line with its delivery's current status (email, SMS, push; null otherwise). */
export type ChannelLineView = ChannelLine & { deliveryStatus: DeliveryStatus | null };

/** A notification as callers see it. */
export type NotificationView = Omit<NotificationRecord, 'channels' | 'requestHash'> & {
  channels: ChannelLineView[];
};

/** A page of a user's notifications. */
export interface NotificationListPage {
  notifications: NotificationView[];
  /** '' on the last page. */
  nextPageToken: string;
}

/** What the Notifier reads. */
export interface NotifierOptions extends Omit<FanOutOptions, 'categories' | 'logger' | 'clock'> {
  config: NotifyConfig;
  store: NotificationStore;
  directory: Pick<
    UserDirectory,
    'getUser' | 'findUser' | 'findUsers' | 'listTopicSubscribers' | 'eraseIfDeleted'
  >;
  /** Where GetNotification reads each delivery's current status. */
  deliveries: Pick<DeliveryPipeline, 'get'>;
  /** Told when a topic notification is recorded (the runner starts at once). */
  onTopicAccepted?: () => void;
  clock?: Clock;
  logger?: Logger;
}

/** Longest user id, topic and backend name. */
export const MAX_ID_LENGTH = 256;
/** Longest idempotency key (the proto's 1-255). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
/** Largest `data` object, as JSON (UTF-8 bytes): it is kept with a topic job until the job ends. */
export const MAX_DATA_BYTES = 64 * 1024;
/** Default and largest page of ListNotifications. */
export const NOTIFICATION_PAGE_SIZES = { default: 50, max: 500 } as const;

/** An id, key or name of a Notify call: at most `max` code points, no control characters, storable. */
function checkId(value: string, field: string, max = MAX_ID_LENGTH): string {
  return checkText(value, field, { max });
}

/** The notify area's service. */
export class Notifier {
  /** One user's fan-out (also what the topic runner uses per member). */
  readonly fanOut: FanOut;
  private readonly categories: ReadonlyMap<string, CategoryConfig>;
  private readonly clock: Clock;
  private readonly log: Logger;
  /** Notifications this process is fanning out now: a concurrent retry does not redo them. */
  private readonly inFlight = new Set<string>();

  constructor(private readonly options: NotifierOptions) {
    this.clock = options.clock ?? systemClock;
    this.log = (options.logger ?? silentLogger()).child({ component: 'notify' });
    this.categories = new Map(options.config.categories.map((c) => [c.name, c]));
    this.fanOut = new FanOut({
      ...options,
      categories: options.config.categories,
      logger: this.log,
      clock: this.clock,
    });
  }

  /** The digests (absent: no digests). */
  get digests(): DigestBook | undefined {
    return this.options.digests;
  }

  /**
   * When a call is due: null for now (no time given, or one not in the future); InvalidArgumentError
   * for both, a negative delay or beyond `notify.max_schedule_ahead`.
   */
  private dueTime(input: NotifyInput): Date | null {
    const { sendAt, delayMs } = input;
    const hasAt = sendAt !== undefined && sendAt !== null;
    const hasDelay = delayMs !== undefined && delayMs !== null;
    if (hasAt && hasDelay) {
      throw new InvalidArgumentError('at most one of send_at and delay', 'delay');
    }
    if (!hasAt && !hasDelay) return null;
    const now = this.clock.now();
    if (hasDelay && (!Number.isFinite(delayMs) || delayMs < 0)) {
      throw new InvalidArgumentError('delay must not be negative', 'delay');
    }
    if (hasAt && Number.isNaN(sendAt.getTime())) {
      throw new InvalidArgumentError('send_at is not a valid time', 'send_at');
    }
    const at = hasAt ? sendAt.getTime() : now + delayMs!;
    const maxMs = this.options.config.max_schedule_ahead * 1000;
    if (at - now > maxMs) {
      throw new InvalidArgumentError(
        `${hasAt ? 'send_at' : 'delay'} is more than notify.max_schedule_ahead (${this.options.config.max_schedule_ahead} s) ahead`,
        hasAt ? 'send_at' : 'delay',
      );
    }
    return at > now ? new Date(at) : null;
  }

  /** The category named, or InvalidArgumentError listing the configured ones. */
  category(name: string): CategoryConfig {
    const category = this.categories.get(name);
    if (category) return category;
    const known = [...this.categories.keys()];
    throw new InvalidArgumentError(
      `unknown category "${cutText(checkId(name, 'category'), 64, { unit: 'code_point' })}"; configured: ${known.length ? known.join(', ') : 'none'}`,
      'category',
    );
  }

  /**
   * Notifies a user, or records a topic fan-out. Errors: unknown user NotFoundError; bad input
   * (unknown category, neither or both of user and topic, a missing template variable)
   * InvalidArgumentError, nothing recorded; the key reused for another request AlreadyExistsError.
   */
  async notify(
    input: NotifyInput,
    scope: string,
  ): Promise<{ notification: NotificationView; created: boolean }> {
    const userId = checkId(input.userId, 'user_id');
    const topic = checkId(input.topic, 'topic');
    if ((userId === '') === (topic === '')) {
      throw new InvalidArgumentError(
        'exactly one of user_id and topic is required',
        userId ? 'topic' : 'user_id',
      );
    }
    // The users area's topic rule: a name no SubscribeTopic accepts can have no members (before, a
    // typo such as "news " was accepted and fanned out to nobody).
    if (topic) checkTopic(topic);
    const category = this.category(input.category);
    const key = checkId(input.idempotencyKey, 'idempotency_key', MAX_IDEMPOTENCY_KEY_LENGTH);
    const overrides = this.checkOverrides(input.overrides, category);
    const data = input.data;
    const dataJson = JSON.stringify(data);
    if (Buffer.byteLength(dataJson) > MAX_DATA_BYTES) {
      throw new InvalidArgumentError(`data is larger than ${MAX_DATA_BYTES} bytes`, 'data');
    }
    // A topic job and a scheduled notification keep `data` in jsonb, which refuses a NUL or a lone
    // surrogate (Connect JSON carries `"\ud800"` in a Struct): refused here for every target and time,
    // not an INTERNAL failed insert (nor a channel failing on the rendered text).
    if (hasUnstorableText(dataJson)) {
      throw new InvalidArgumentError('data must not contain NUL characters or broken text', 'data');
    }
    const dueAt = this.dueTime(input);
    // send_at / delay are part of the request (only when given: earlier hashes stay the same).
    const timing = {
      ...(input.sendAt ? { sendAt: input.sendAt.toISOString() } : {}),
      ...(input.delayMs !== undefined && input.delayMs !== null ? { delayMs: input.delayMs } : {}),
    };
    const requestHash = createHash('sha256')
      .update(
        canonicalJson({
          userId,
          topic,
          category: category.name,
          data,
          overrides,
          priority: input.priority,
          ...timing,
        }),
      )
      .digest('hex');

    if (key) {
      const existing = await this.options.store.findByKey(scope, key);
      if (existing) return this.replay(existing, requestHash, data, overrides);
    }
    const base = {
      id: newId(),
      scope,
      category: category.name,
      priority: input.priority,
      idempotencyKey: key || null,
      requestHash,
      status: dueAt ? ('scheduled' as const) : ('accepted' as const),
      sendAt: dueAt,
      parentId: null,
      createdAt: new Date(this.clock.now()),
    };
    if (topic) {
      const request: TopicRequest = { data, overrides };
      const { record, created } = await this.options.store.create({ ...base, userId: null, topic }, request);
      if (!created) return this.replay(record, requestHash, data, overrides);
      this.log.info({ notificationId: record.id, category: category.name }, 'topic notification accepted');
      if (!dueAt) this.options.onTopicAccepted?.();
      return { notification: await this.view(record), created: true };
    }
    const user = await this.options.directory.getUser(userId);
    // Render first: a missing variable refuses the call before anything is recorded or sent.
    const plans = await this.fanOut.plan(user, category, data, overrides, 'throw');
    if (dueAt) {
      // Scheduled: validated and rendered now; rendered again when due (the user as they are then).
      const { record, created } = await this.options.store.create(
        { ...base, userId: user.userId, topic: null },
        { data, overrides },
      );
      if (!created) return this.replay(record, requestHash, data, overrides);
      this.log.info({ notificationId: record.id, sendAt: dueAt.toISOString() }, 'notification scheduled');
      return { notification: await this.view(record), created: true };
    }
    const { record, created } = await this.options.store.create({
      ...base,
      userId: user.userId,
      topic: null,
    });
    if (!created) return this.replay(record, requestHash, data, overrides);
    return {
      notification: await this.view(
        await this.deliver(record, user, { data, overrides }, () => Promise.resolve(plans)),
      ),
      created: true,
    };
  }

  /**
   * The same key again: the same request answers the notification (created false), finishing a
   * user fan-out a crash interrupted (the deliveries' keys make that safe); another request is
   * AlreadyExistsError.
   */
  private async replay(
    existing: NotificationRecord,
    requestHash: string,
    data: Record<string, unknown>,
    overrides: ChannelOverride[],
  ): Promise<{ notification: NotificationView; created: boolean }> {
    if (existing.requestHash !== requestHash) {
      throw new AlreadyExistsError('idempotency_key was already used for a different notification');
    }
    if (existing.status === 'accepted' && existing.userId !== null && existing.topic === null) {
      const user = await this.options.directory.getUser(existing.userId);
      const category = this.category(existing.category);
      const resumed = await this.deliver(existing, user, { data, overrides }, () =>
        this.fanOut.plan(user, category, data, overrides, 'throw'),
      );
      return { notification: await this.view(resumed), created: false };
    }
    return { notification: await this.view(existing), created: false };
  }

  /** Fans out a recorded user notification and saves its lines (unless this process is already at it). */
  private async deliver(
    record: NotificationRecord,
    user: User,
    request: TopicRequest,
    plan: () => ReturnType<FanOut['plan']>,
  ): Promise<NotificationRecord> {
    if (this.inFlight.has(record.id)) return record;
    this.inFlight.add(record.id);
    try {
      const lines = await this.fanOut.send(record, user, await plan(), request.data);
      await this.options.store.saveFanOut(record.id, lines, request);
      this.log.debug({ notificationId: record.id, lines: lines.length }, 'notification fanned out');
      // The user was read before the writes: a DeleteUser in between erased before they landed.
      await this.options.directory.eraseIfDeleted([user.userId]);
      return { ...record, channels: lines, status: 'fanned_out' };
    } finally {
      this.inFlight.delete(record.id);
    }
  }

  private checkOverrides(overrides: readonly ChannelOverride[], category: CategoryConfig): ChannelOverride[] {
    const seen = new Set<string>();
    return overrides.map((o, i) => {
      const field = `overrides[${i}]`;
      if (!NOTIFY_CHANNELS.includes(o.channel)) {
        throw new InvalidArgumentError(`${field}.channel is required`, `${field}.channel`);
      }
      if (!category.channels.includes(o.channel)) {
        throw new InvalidArgumentError(
          `${field}.channel: category "${category.name}" does not use ${o.channel}`,
          `${field}.channel`,
        );
      }
      if (seen.has(o.channel)) {
        throw new InvalidArgumentError(
          `${field}.channel: ${o.channel} is overridden twice`,
          `${field}.channel`,
        );
      }
      seen.add(o.channel);
      const backend = checkId(o.backend, `${field}.backend`, 128);
      if (backend && o.channel === 'inbox') {
        throw new InvalidArgumentError(`${field}.backend: the inbox has no backends`, `${field}.backend`);
      }
      return { channel: o.channel, skip: o.skip, backend, ...(o.content ? { content: o.content } : {}) };
    });
  }

  /**
   * CancelNotification: by id or by the caller's idempotency key (exactly one). A scheduled
   * notification is cancelled (never fans out); held lines and lines waiting in an open digest
   * become skipped `cancelled`; lines sent keep their delivery. Again: the same answer, 0 cancelled.
   * Another caller's or unknown: NotFoundError.
   */
  async cancel(ref: { id: string; idempotencyKey: string }, scope: string): Promise<CancelResult> {
    const id = ref.id.toLowerCase();
    const key = checkId(ref.idempotencyKey, 'idempotency_key', MAX_IDEMPOTENCY_KEY_LENGTH);
    if ((id === '') === (key === '')) {
      throw new InvalidArgumentError(
        'exactly one of id and idempotency_key is required',
        id ? 'idempotency_key' : 'id',
      );
    }
    if (id && !isUuid(id)) throw new InvalidArgumentError('id must be a UUID', 'id');
    const found = id ? await this.options.store.get(id) : await this.options.store.findByKey(scope, key);
    if (!found || found.scope !== scope) {
      throw new NotFoundError(`notification ${id || `with idempotency_key "${key.slice(0, 64)}"`} not found`);
    }
    // First what the store holds (scheduled, held): after this, unless a runner holds it, nothing of
    // it is due any more, so no runner can take it while the digested events are taken back.
    const first = await this.options.store.cancel(found.id, []);
    if (!first) throw new NotFoundError(`notification ${found.id} not found`);
    let result = first;
    const waiting = first.record.channels.filter(
      (l) => l.digestId && l.messageId === null && l.skipped === null,
    );
    if (!first.going && waiting.length > 0 && this.options.digests) {
      // Digested events are taken out of digests not yet taken; a digest already going keeps them.
      await this.options.digests.removeNotification(found.id);
      const digestIds: string[] = [];
      for (const digestId of new Set(waiting.map((l) => l.digestId!))) {
        const state = await this.options.digests.get(digestId);
        if (!state || state.status === 'open' || state.status === 'cancelled') digestIds.push(digestId);
      }
      const second = await this.options.store.cancel(found.id, digestIds);
      if (second) result = { ...second, cancelled: first.cancelled + second.cancelled };
    }
    if (result.cancelled > 0) {
      this.log.info({ notificationId: found.id, cancelled: result.cancelled }, 'notification cancelled');
    }
    return { notification: await this.view(result.record, true), cancelled: result.cancelled };
  }

  /**
   * The runner's work on one due notification it holds: a scheduled one fans out now (the user and
   * templates as they are now; a user deleted since gets nothing); held lines whose time came are
   * released: the rules from quiet hours on applied again, then sent. The lines are saved under the
   * lease (lost: nothing saved, another runner redoes it; the delivery keys make that safe).
   */
  async runDue(due: DueNotification, owner: string): Promise<void> {
    const { store, directory } = this.options;
    const record = due.notification;
    const user = record.userId === null ? undefined : await directory.findUser(record.userId);
    const category = this.categories.get(record.category);
    if (due.kind === 'send') {
      if (!user || !category) {
        if (!category) this.log.warn({ notificationId: record.id }, 'scheduled notification: category gone');
        await store.finishDue(record.id, owner, []);
        return;
      }
      const plans = await this.fanOut.plan(user, category, due.request.data, due.request.overrides, 'record');
      const lines = await this.fanOut.send(record, user, plans, due.request.data);
      await store.finishDue(record.id, owner, lines);
      await directory.eraseIfDeleted([user.userId]);
      return;
    }
    // Release: the held lines whose time came (at least the earliest, which made it due).
    const held = record.channels.filter((l) => l.heldUntil);
    const earliest = Math.min(...held.map((l) => l.heldUntil!.getTime()));
    const upTo = Math.max(this.clock.now(), earliest);
    const released = new Set(held.filter((l) => l.heldUntil!.getTime() <= upTo).map((l) => l.channel));
    let fresh: ChannelLine[];
    if (!user || !category) {
      fresh = [...released].map((channel) => ({
        channel,
        contact: '',
        messageId: null,
        skipped: null,
        error: user ? 'the category is no longer configured' : 'user deleted',
        locale: '',
      }));
    } else {
      const only = { ...category, channels: category.channels.filter((c) => released.has(c)) };
      const plans = await this.fanOut.plan(user, only, due.request.data, due.request.overrides, 'record');
      fresh = await this.fanOut.send(record, user, plans, due.request.data, { fromQuietHours: true });
    }
    const lines: ChannelLine[] = [];
    for (const line of record.channels) {
      if (line.heldUntil && released.has(line.channel)) {
        lines.push(...fresh.filter((l) => l.channel === line.channel));
      } else {
        lines.push(line);
      }
    }
    await store.finishDue(record.id, owner, lines);
    if (user) await directory.eraseIfDeleted([user.userId]);
  }

  /**
   * The runner's work on one due digest it holds: the user read again, the category's digest
   * template rendered (`<name>.digest`: `data.events`, oldest first, and `data.count`), quiet hours
   * and caps applied to it as one message (held: deferred; throttled: finished with the error), then
   * sent once and finished with its delivery id. Nothing is lost silently: every end is logged.
   */
  async sendDigest(digest: DueDigest, owner: string): Promise<void> {
    const book = this.options.digests;
    if (!book) return;
    const finish = async (messageId: string | null, error: string | null) => {
      if (error) this.log.warn({ digestId: digest.id, error }, 'digest finished without a send');
      await book.finish(digest.id, owner, messageId, error === null ? null : lineError(error));
    };
    const user = await this.options.directory.findUser(digest.userId);
    if (!user) return finish(null, 'user deleted');
    const category = this.categories.get(digest.category);
    if (!category) return finish(null, 'the category is no longer configured');
    // The user's choice as it is now (a required category reaches them whatever is stored).
    if (
      !category.required &&
      !(await this.options.preferences.isEnabled(user.userId, category.name, digest.channel))
    ) {
      return finish(null, 'turned off by the user');
    }
    const contacts = contactsOf(user, digest.channel);
    if (contacts.length === 0) return finish(null, 'no contact point');
    let rendered;
    try {
      rendered = await this.options.renderer.render({
        category: `${digest.category}.digest`,
        channel: digest.channel,
        locale: user.locale,
        timeZone: user.timeZone,
        data: { events: digest.events.map((e) => e.data), count: digest.events.length },
        user: templateUser(user),
      });
    } catch (err) {
      if (!isDomainError(err)) throw err;
      return finish(null, err.message);
    }
    if (!rendered) return finish(null, `no digest template (${digest.category}.digest, ${digest.channel})`);
    const wait = await this.fanOut.waitFor(user, digest.channel, category);
    if (wait && 'until' in wait) {
      await book.defer(digest.id, owner, wait.until);
      return;
    }
    if (wait) return finish(null, `throttled by ${wait.throttledBy}`);
    const sent = await this.fanOut.sendDigest(digest, user, {
      channel: digest.channel,
      locale: rendered.locale,
      content: rendered.content,
      contacts,
      backend: '',
    });
    await finish(sent.messageId, sent.error);
    await this.options.directory.eraseIfDeleted([user.userId]);
  }

  /** One notification of the caller; NotFoundError when unknown or another caller's. */
  async get(id: string, scope: string): Promise<NotificationView> {
    const normalised = id.toLowerCase();
    if (!isUuid(normalised)) throw new InvalidArgumentError('id must be a UUID', 'id');
    const record = await this.options.store.get(normalised);
    if (!record || record.scope !== scope) throw new NotFoundError(`notification ${normalised} not found`);
    return this.view(record, true);
  }

  /** A user's notifications of the caller, newest first (each delivery's status: GetNotification). */
  async list(userId: string, scope: string, pageSize = 0, pageToken = ''): Promise<NotificationListPage> {
    if (userId === '') throw new InvalidArgumentError('user_id is required', 'user_id');
    checkId(userId, 'user_id');
    const limit = resolvePageSize(pageSize, NOTIFICATION_PAGE_SIZES);
    const binding = `notifications:${scope}:${userId}`;
    const after = pageToken ? decodeKeysetToken(binding, pageToken) : undefined;
    const page = await this.options.store.list(scope, userId, limit, after);
    return {
      notifications: await Promise.all(page.records.map((r) => this.view(r))),
      nextPageToken: page.nextKey ? encodeKeysetToken(binding, page.nextKey) : '',
    };
  }

  /**
   * The operator console: a user's latest notifications of every caller, newest first, at most
   * `limit` (each without its deliveries' statuses).
   */
  async recentOfUser(userId: string, limit: number): Promise<NotificationView[]> {
    checkId(userId, 'user_id');
    const page = await this.options.store.listAll({ userId }, limit);
    return Promise.all(page.records.map((r) => this.view(r)));
  }

  /**
   * Operators (the console's activity feed): every caller's notifications under `filter`, newest
   * first, `limit` of them (the caller has bounded it); each line with its delivery's status.
   */
  async listAll(filter: NotificationFilter, limit: number, pageToken = ''): Promise<NotificationListPage> {
    const binding = `notifications-all:${canonicalJson({ ...filter })}`;
    const after = pageToken ? decodeKeysetToken(binding, pageToken) : undefined;
    const page = await this.options.store.listAll(filter, limit, after);
    return {
      notifications: await Promise.all(page.records.map((r) => this.view(r, true))),
      nextPageToken: page.nextKey ? encodeKeysetToken(binding, page.nextKey) : '',
    };
  }

  /** Operators: one notification of any caller, with its lines' statuses; NotFoundError when unknown. */
  async getAny(id: string): Promise<NotificationView> {
    const normalised = id.toLowerCase();
    if (!isUuid(normalised)) throw new InvalidArgumentError('id must be a UUID', 'id');
    const record = await this.options.store.get(normalised);
    if (!record) throw new NotFoundError(`notification ${normalised} not found`);
    return this.view(record, true);
  }

  /** Operators: the notification a delivery was sent for (one of its lines names it), or null. */
  async findByDelivery(deliveryId: string): Promise<NotificationView | null> {
    const record = await this.options.store.findByMessageId(deliveryId);
    return record ? this.view(record) : null;
  }

  /** DeleteUser's eraser: deletes the user's notifications. */
  readonly eraseUser = async (userId: string): Promise<void> => {
    await this.options.store.eraseUser(userId);
  };

  private async view(record: NotificationRecord, withStatus = false): Promise<NotificationView> {
    // eslint-disable-next-line @typescript-eslint/no-unused-vars
    const { requestHash, channels, ...rest } = record;
    const lines = await Promise.all(
      channels.map(async (line): Promise<ChannelLineView> => {
        if (withStatus && line.digestId && line.messageId === null && line.skipped === null) {
          // A digested line shows the digest's delivery once the digest went, or why nothing went.
          const state = await this.options.digests?.get(line.digestId);
          if (state?.messageId) line = { ...line, messageId: state.messageId };
          else if (state?.status === 'sent' && state.error) line = { ...line, error: state.error };
        }
        if (!withStatus || line.channel === 'inbox' || line.messageId === null) {
          return { ...line, deliveryStatus: null };
        }
        try {
          return {
            ...line,
            deliveryStatus: (await this.options.deliveries.get(line.messageId, record.scope)).status,
          };
        } catch (err) {
          // The retention deleted it: no status to show.
          if (err instanceof NotFoundError) return { ...line, deliveryStatus: null };
          throw err;
        }
      }),
    );
    return { ...rest, channels: lines };
  }
}
