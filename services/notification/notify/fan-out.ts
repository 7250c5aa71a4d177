/**
 * One user's fan-out: decide every channel of the category (skip with a reason, or render it), then
 * send each rendered channel to each contact point through the existing senders (the inbox's send,
 * EmailSender, SmsSender, PushSender: the one pipeline with suppression, failover and receipts).
 * Each delivery's idempotency key is derived from the notification id, the channel and the contact
 * point, so a fan-out redone (a retried Notify, a topic page redone after a crash) never submits a
 * delivery twice. Channels are isolated: one channel's error is recorded on its line and the others
 * go on.
 *
 * The time rules (issue 26) come between the plan and the send, per channel line, for NORMAL
 * priority and non-required categories, never for the inbox: digest (DigestBook.add: one line with
 * the digest id), quiet hours (held until the window's end), caps (CapLedger.take: throttled, or held
 * until the next free slot). A due digest is sent here too, keyed by its digest id.
 */
import { createHash } from 'node:crypto';
import { isDomainError } from '../../../shared/errors';
import { cutText } from '../../../shared/text/cut';
import type { Logger } from '../../../shared/logging/logger';
import type { EmailSender } from '../channels/email/email-sender';
import type { PushSender } from '../channels/push';
import type { SmsSender } from '../channels/sms/sms-sender';
import type { Channel } from '../delivery/driver';
import { maskRecipient } from '../delivery/mask';
import type { DeliveryView } from '../delivery/types';
import type { InboxService } from '../inbox/inbox-service';
import type { PreferenceBook } from '../users/preferences/types';
import type { RenderedContent, TemplateRenderer } from '../templates/types';
import { NO_QUIET_HOURS, type QuietHoursEnd, type User } from '../users/types';
import { type Clock, systemClock } from '../../../shared/runtime/clock';
import type { CategoryConfig, NotifyChannel } from './config';
import type { CapLedger, DigestBook, DueDigest, TimedChannel } from './timing';
import type { ChannelLine, ChannelOverride, NotificationRecord, SkipReason } from './types';

/** Where a fan-out sends: the inbox and the three delivery channels' senders. */
export interface FanOutTargets {
  inbox: Pick<InboxService, 'send'>;
  email: Pick<EmailSender, 'send'>;
  sms: Pick<SmsSender, 'send'>;
  push: Pick<PushSender, 'send'>;
  /** Whether a delivery channel has at least one backend configured. */
  configured(channel: Channel): boolean;
}

/**
 * The List-Unsubscribe headers of an email of a non-required category (RFC 8058), from the
 * preferences area (`unsubscribeHeaders`); empty when none apply.
 */
export type UnsubscribeHeaders = (
  userId: string,
  category: string,
) => Promise<Record<string, string>> | Record<string, string>;

/** One contact point of a channel. */
interface Contact {
  /** The full address, number or token ('' for the inbox). */
  value: string;
  /** A device's own backend. */
  backend?: string;
}

/** A channel decided: skipped (with why), or rendered for its contact points. */
export interface PlannedChannel {
  channel: NotifyChannel;
  skipped?: SkipReason;
  error?: string;
  locale: string;
  content?: RenderedContent;
  contacts: Contact[];
  /** The override's backend ('' for none). */
  backend: string;
}

/** A member whose own data failed to render (topic fan-out): the error names the variable. */
export class RenderFailure {
  constructor(readonly message: string) {}
}

/** What the fan-out reads. */
export interface FanOutOptions {
  targets: FanOutTargets;
  preferences: Pick<PreferenceBook, 'isEnabled'>;
  renderer: TemplateRenderer;
  unsubscribeHeaders: UnsubscribeHeaders;
  /** `notify.categories`. */
  categories: readonly CategoryConfig[];
  logger: Logger;
  /** The frequency caps (`notify.caps`); absent: no caps. */
  caps?: CapLedger;
  /** The open digests; absent: no digests (each message goes on its own). */
  digests?: DigestBook;
  /** The users area's quiet-hours rule; absent: no quiet hours. */
  quietHoursEnd?: QuietHoursEnd;
  /** What "now" is for quiet hours. */
  clock?: Clock;
}

/** What a delivery of the fan-out is sent for: a notification, or a digest (its id keys its deliveries). */
interface SendTarget {
  id: string;
  scope: string;
  category: string;
  /** The delivery's idempotency key for a contact point. */
  key(channel: NotifyChannel, contact: string): string;
}

/** Longest `throttled_by` of a line, in code points (the cap ledger names the cap: `sms 3/1h`). */
export const MAX_THROTTLED_BY = 128;

/**
 * The digest key of an event: the data field named by `field`, stringified, or the category. Kept
 * whole: the digest book stores a long key hashed (`storedKey` of `digest/rules.ts`, the one bound),
 * so two threads whose keys share their first 256 code points stay two digests (this cut them at
 * 256 before, which merged them).
 */
export function digestKey(field: string, data: Record<string, unknown>, category: string): string {
  if (field === '') return category;
  const value = data[field];
  if (value === undefined || value === null) return category;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The idempotency key of one delivery of a digest (derived from the digest id; at most 90 characters). */
export function digestDeliveryKey(digestId: string, channel: NotifyChannel, contact: string): string {
  const digest = createHash('sha256').update(contact).digest('hex').slice(0, 40);
  // A UUID as it is; any longer id by its hash (never two digests on one key).
  const id =
    digestId.length <= 36 ? digestId : createHash('sha256').update(digestId).digest('hex').slice(0, 36);
  return `digest:${id}:${channel}:${digest}`;
}

/** The contact points a user has for a channel. */
export function contactsOf(user: User, channel: NotifyChannel): Contact[] {
  switch (channel) {
    case 'inbox':
      return [{ value: '' }];
    case 'email':
      return user.emails.map((value) => ({ value }));
    case 'sms':
      return user.phones.map((value) => ({ value }));
    case 'push':
      return user.devices.map((d) => ({ value: d.token, ...(d.backend ? { backend: d.backend } : {}) }));
  }
}

/** What templates read as `user`: never a contact point. */
export function templateUser(user: User): Record<string, unknown> {
  return {
    user_id: user.userId,
    locale: user.locale,
    time_zone: user.timeZone,
    attributes: user.attributes,
  };
}

/** The idempotency key of one delivery of a fan-out (at most 96 characters, whatever the contact). */
export function fanOutKey(notificationId: string, channel: NotifyChannel, contact: string): string {
  const digest = createHash('sha256').update(contact).digest('hex').slice(0, 40);
  return `notify:${notificationId}:${channel}:${digest}`;
}

/** A push data object as the push channel takes it (string values; others as JSON). */
function pushData(data: Record<string, unknown> | undefined): Record<string, string> | undefined {
  if (!data || Object.keys(data).length === 0) return undefined;
  return Object.fromEntries(
    Object.entries(data).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
  );
}

/** Longest `error` of a line, in code points (a domain error may quote a long template or value). */
export const MAX_LINE_ERROR = 500;

/** A line's error text, cut on code points (never inside a surrogate pair) with an ellipsis. */
export function lineError(message: string): string {
  return cutText(message, MAX_LINE_ERROR, { unit: 'code_point', ellipsis: '…' });
}

/** One user's fan-out. */
export class FanOut {
  private readonly clock: Clock;

  constructor(private readonly options: FanOutOptions) {
    this.clock = options.clock ?? systemClock;
  }

  /**
   * Decides and renders every channel of `category` for `user`. Strict (`onRenderError` 'throw'): a
   * missing variable throws InvalidArgumentError naming it, before anything is recorded or sent.
   * 'record': the channel is planned as skipped RENDER_FAILED (a topic member's own data).
   */
  async plan(
    user: User,
    category: CategoryConfig,
    data: Record<string, unknown>,
    overrides: readonly ChannelOverride[],
    onRenderError: 'throw' | 'record',
  ): Promise<PlannedChannel[]> {
    const plans: PlannedChannel[] = [];
    for (const channel of category.channels) {
      const override = overrides.find((o) => o.channel === channel);
      const plan: PlannedChannel = { channel, locale: '', contacts: [], backend: override?.backend ?? '' };
      plans.push(plan);
      if (override?.skip) {
        plan.skipped = 'overridden';
        continue;
      }
      // A required category reaches the user whatever the stored choices.
      if (
        !category.required &&
        !(await this.options.preferences.isEnabled(user.userId, category.name, channel))
      ) {
        plan.skipped = 'preference_off';
        continue;
      }
      const contacts = contactsOf(user, channel);
      if (contacts.length === 0) {
        plan.skipped = 'no_contact_point';
        continue;
      }
      if (channel !== 'inbox' && !this.options.targets.configured(channel)) {
        plan.skipped = 'channel_not_configured';
        continue;
      }
      let rendered;
      try {
        rendered = await this.options.renderer.render({
          category: category.name,
          channel,
          locale: user.locale,
          timeZone: user.timeZone,
          data,
          user: templateUser(user),
          ...(override?.content ? { override: override.content } : {}),
        });
      } catch (err) {
        if (onRenderError === 'throw' || !isDomainError(err) || err.code !== 'INVALID_ARGUMENT') throw err;
        plan.skipped = 'render_failed';
        plan.error = lineError(err.message);
        continue;
      }
      if (!rendered) {
        plan.skipped = 'no_template';
        continue;
      }
      plan.locale = rendered.locale;
      plan.content = rendered.content;
      plan.contacts = contacts;
    }
    return plans;
  }

  /**
   * Sends every planned channel to each of its contact points (all channels at once, each isolated)
   * and returns the lines, in plan order. Never throws for one channel's failure.
   */
  async send(
    notification: NotificationRecord,
    user: User,
    plans: readonly PlannedChannel[],
    data: Record<string, unknown>,
    options: { fromQuietHours?: boolean } = {},
  ): Promise<ChannelLine[]> {
    const lines = await Promise.all(
      plans.map((plan) => this.sendChannel(notification, user, plan, data, options.fromQuietHours === true)),
    );
    return lines.flat();
  }

  private category(name: string): CategoryConfig | undefined {
    return this.options.categories.find((c) => c.name === name);
  }

  /**
   * The time rules of one channel line (NORMAL priority, non-required category, never the inbox), in
   * order: a. digest, b. quiet hours, c. caps. A line when the message does not go now; null: send it.
   */
  private async timeRules(
    notification: NotificationRecord,
    user: User,
    plan: PlannedChannel,
    data: Record<string, unknown>,
    fromQuietHours: boolean,
  ): Promise<ChannelLine | null> {
    const category = this.category(notification.category);
    if (plan.channel === 'inbox' || notification.priority !== 'normal' || !category || category.required) {
      return null;
    }
    const channel: TimedChannel = plan.channel;
    const base: ChannelLine = {
      channel,
      contact: '',
      messageId: null,
      skipped: null,
      error: null,
      locale: plan.locale,
    };
    const digest = category.digest?.[channel];
    if (!fromQuietHours && digest && this.options.digests) {
      const { digestId } = await this.options.digests.add({
        scope: notification.scope,
        userId: user.userId,
        category: category.name,
        channel,
        key: digestKey(digest.key, data, category.name),
        notificationId: notification.id,
        occurredAt: notification.createdAt,
        data,
        // A daily_at window is the user's local day.
        timeZone: user.timeZone,
      });
      return { ...base, digestId };
    }
    const wait = await this.waitFor(user, channel, category);
    if (wait === null) return null;
    if ('throttledBy' in wait) {
      return {
        ...base,
        skipped: 'throttled',
        throttledBy: cutText(wait.throttledBy, MAX_THROTTLED_BY, { unit: 'code_point', ellipsis: '…' }),
      };
    }
    return { ...base, heldUntil: wait.until, holdReason: wait.reason };
  }

  /**
   * Rules b and c for one message of `channel` to `user` (a line, or a digest): null when it goes
   * now (a cap slot taken); otherwise until when it waits, or the cap that throttles it.
   */
  async waitFor(
    user: User,
    channel: TimedChannel,
    category: CategoryConfig,
  ): Promise<null | { until: Date; reason: 'quiet_hours' | 'cap_deferred' } | { throttledBy: string }> {
    const quiet = user.quietHours ?? NO_QUIET_HOURS;
    if (this.options.quietHoursEnd && (channel !== 'email' || quiet.holdEmail)) {
      const end = this.options.quietHoursEnd(quiet, user.timeZone, new Date(this.clock.now()));
      if (end) return { until: end, reason: 'quiet_hours' };
    }
    if (this.options.caps) {
      const decision = await this.options.caps.take(user.userId, channel);
      if (!decision.taken) {
        if (category.on_cap === 'defer') return { until: decision.nextFreeAt, reason: 'cap_deferred' };
        return { throttledBy: decision.cap };
      }
    }
    return null;
  }

  /**
   * Sends a due digest's rendered message to each of the user's contact points of its channel
   * (each delivery keyed by the digest id: sent once whatever happens); the first delivery id, or
   * the error when none went.
   */
  async sendDigest(
    digest: DueDigest,
    user: User,
    plan: PlannedChannel,
  ): Promise<{ messageId: string | null; error: string | null }> {
    const target: SendTarget = {
      id: digest.id,
      scope: digest.scope,
      category: digest.category,
      key: (channel, contact) => digestDeliveryKey(digest.id, channel, contact),
    };
    const lines = await this.deliverPlan(target, user, plan);
    const sent = lines.find((l) => l.messageId !== null);
    if (sent) return { messageId: sent.messageId, error: null };
    return { messageId: null, error: lines.find((l) => l.error)?.error ?? 'nothing was sent' };
  }

  private async sendChannel(
    notification: NotificationRecord,
    user: User,
    plan: PlannedChannel,
    data: Record<string, unknown>,
    fromQuietHours: boolean,
  ): Promise<ChannelLine[]> {
    if (plan.skipped || !plan.content) {
      return [
        {
          channel: plan.channel,
          contact: '',
          messageId: null,
          skipped: plan.skipped ?? 'no_template',
          error: plan.error ?? null,
          locale: plan.locale,
        },
      ];
    }
    try {
      const timed = await this.timeRules(notification, user, plan, data, fromQuietHours);
      if (timed) return [timed];
    } catch (err) {
      // A cap ledger or digest book failing: the line says so; the other channels go on.
      const message = isDomainError(err) ? err.message : 'internal error';
      if (!isDomainError(err)) {
        this.options.logger.error(
          { err, notificationId: notification.id, channel: plan.channel },
          'fan-out time rules failed',
        );
      }
      return [
        {
          channel: plan.channel,
          contact: '',
          messageId: null,
          skipped: null,
          error: lineError(message),
          locale: plan.locale,
        },
      ];
    }
    const target: SendTarget = {
      id: notification.id,
      scope: notification.scope,
      category: notification.category,
      key: (channel, contact) => fanOutKey(notification.id, channel, contact),
    };
    return this.deliverPlan(target, user, plan);
  }

  /** Sends a rendered channel to each of its contact points (each isolated). */
  private async deliverPlan(target: SendTarget, user: User, plan: PlannedChannel): Promise<ChannelLine[]> {
    let headers: Record<string, string> = {};
    if (plan.channel === 'email' && !this.isRequired(target.category)) {
      try {
        headers = await this.options.unsubscribeHeaders(user.userId, target.category);
      } catch (err) {
        this.options.logger.error({ err, notificationId: target.id }, 'unsubscribe headers failed');
        return plan.contacts.map((c) => this.failed(plan, c, 'the unsubscribe link could not be made'));
      }
    }
    return Promise.all(
      plan.contacts.map(async (contact): Promise<ChannelLine> => {
        try {
          return await this.sendOne(target, user, plan, contact, headers);
        } catch (err) {
          const message = isDomainError(err) ? err.message : 'internal error';
          if (!isDomainError(err)) {
            this.options.logger.error(
              { err, notificationId: target.id, channel: plan.channel },
              'fan-out channel failed',
            );
          }
          return this.failed(plan, contact, message);
        }
      }),
    );
  }

  /** A required category's emails carry no unsubscribe link (it cannot be turned off). */
  private isRequired(category: string): boolean {
    return this.category(category)?.required === true;
  }

  private failed(plan: PlannedChannel, contact: Contact, error: string): ChannelLine {
    return {
      channel: plan.channel,
      contact: this.mask(plan.channel, contact.value),
      messageId: null,
      skipped: null,
      error: lineError(error),
      locale: plan.locale,
    };
  }

  private mask(channel: NotifyChannel, value: string): string {
    return channel === 'inbox' ? '' : maskRecipient(channel, value);
  }

  private async sendOne(
    notification: SendTarget,
    user: User,
    plan: PlannedChannel,
    contact: Contact,
    headers: Record<string, string>,
  ): Promise<ChannelLine> {
    const content = plan.content!;
    const line = (messageId: string, delivery?: DeliveryView): ChannelLine => {
      const suppressed = delivery?.failure === 'recipient_suppressed';
      return {
        channel: plan.channel,
        contact: this.mask(plan.channel, contact.value),
        messageId,
        skipped: suppressed ? 'suppressed' : null,
        error: null,
        locale: plan.locale,
      };
    };
    const scope = notification.scope;
    const idempotencyKey = notification.key(plan.channel, contact.value);
    const backend = plan.backend || undefined;
    switch (plan.channel) {
      case 'inbox': {
        const message = await this.options.targets.inbox.send({
          userId: user.userId,
          title: content.title ?? '',
          body: content.body ?? '',
          metadata: { notification_id: notification.id, category: notification.category },
        });
        return line(message.id);
      }
      case 'email': {
        const result = await this.options.targets.email.send(
          {
            to: [contact.value],
            subject: content.subject ?? '',
            ...(content.html ? { html: content.html } : {}),
            ...(content.text ? { text: content.text } : {}),
            headers,
            backend,
            idempotencyKey,
            userId: user.userId,
            category: notification.category,
          },
          scope,
        );
        return line(result.delivery.id, result.delivery);
      }
      case 'sms': {
        const result = await this.options.targets.sms.send(
          {
            to: contact.value,
            body: content.text ?? '',
            backend,
            idempotencyKey,
            userId: user.userId,
            category: notification.category,
          },
          scope,
        );
        return line(result.delivery.id, result.delivery);
      }
      case 'push': {
        const data = pushData(content.data);
        const delivery = await this.options.targets.push.send(
          {
            deviceToken: contact.value,
            ...(content.title ? { title: content.title } : {}),
            ...(content.body ? { body: content.body } : {}),
            ...(data ? { data } : {}),
          },
          {
            backend: backend ?? contact.backend,
            idempotencyKey,
            userId: user.userId,
            category: notification.category,
          },
          scope,
        );
        return line(delivery.id, delivery);
      }
    }
  }
}
