/**
 * Small FAKES of the three ports the notify area reads (users/types.ts UserDirectory,
 * preferences/types.ts PreferenceBook, templates/types.ts TemplateRenderer) and of the
 * `unsubscribeHeaders` function, until the real areas are merged. They are fakes of the PORTS, not of
 * anything notify builds: the notification store, the fan-out, the inbox and the delivery pipeline in
 * these tests are the real ones. The renderer uses LiquidJS in strict mode, as the real one does.
 */
import { Liquid } from 'liquidjs';
import { InvalidArgumentError, NotFoundError } from '../../../shared/errors';
import type { NotifyChannel } from '../../../services/notification/notify/config';
import type { PreferenceBook } from '../../../services/notification/users/preferences/types';
import type {
  Rendered,
  RenderInput,
  TemplateContent,
  TemplateRenderer,
} from '../../../services/notification/templates/types';
import type {
  QuietHoursEnd,
  TopicPage,
  User,
  UserDirectory,
} from '../../../services/notification/users/types';
import type {
  CapDecision,
  CapLedger,
  DigestBook,
  DigestEvent,
  DigestState,
  DueDigest,
  TimedChannel,
} from '../../../services/notification/notify/timing';
import type { FanOutTargets } from '../../../services/notification/notify/fan-out';
import type { DeliveryView } from '../../../services/notification/delivery/types';
import type { Clock } from '../../../shared/runtime/clock';

type DirectoryPart = Pick<
  UserDirectory,
  'getUser' | 'findUser' | 'findUsers' | 'listTopicSubscribers' | 'eraseIfDeleted'
>;

/** A fake UserDirectory: users and topics in maps. */
export class FakeDirectory implements DirectoryPart {
  readonly users = new Map<string, User>();
  readonly topics = new Map<string, string[]>();
  /** Pages handed out (tests count steps). */
  pagesRead = 0;

  add(user: Partial<User> & { userId: string }): User {
    const now = new Date();
    const full: User = {
      emails: [],
      phones: [],
      locale: '',
      timeZone: '',
      quietHours: { windows: [], holdEmail: false },
      attributes: {},
      devices: [],
      createdAt: now,
      updatedAt: now,
      ...user,
    };
    this.users.set(full.userId, full);
    return full;
  }

  subscribe(topic: string, userIds: readonly string[]): void {
    const members = new Set([...(this.topics.get(topic) ?? []), ...userIds]);
    this.topics.set(topic, [...members].sort());
  }

  async getUser(userId: string): Promise<User> {
    const user = this.users.get(userId);
    if (!user) throw new NotFoundError(`user ${userId} not found`);
    return user;
  }

  async findUser(userId: string): Promise<User | undefined> {
    return this.users.get(userId);
  }

  async findUsers(userIds: readonly string[]): Promise<Map<string, User>> {
    const found = new Map<string, User>();
    for (const id of userIds) {
      const user = this.users.get(id);
      if (user) found.set(id, user);
    }
    return found;
  }

  /** Users `eraseIfDeleted` found gone (the fake has no erasers: tests read this). */
  readonly erasedAfterWrite: string[] = [];

  async eraseIfDeleted(userIds: readonly string[]): Promise<string[]> {
    const gone = [...new Set(userIds)].filter((id) => !this.users.has(id));
    this.erasedAfterWrite.push(...gone);
    return gone;
  }

  async listTopicSubscribers(topic: string, pageSize: number, pageToken?: string): Promise<TopicPage> {
    this.pagesRead++;
    const members = this.topics.get(topic) ?? [];
    // The token is the last user id of the previous page (user id order), as the real one keys it.
    const after = pageToken ? Buffer.from(pageToken, 'base64url').toString('utf8') : undefined;
    const start = after === undefined ? 0 : members.findIndex((m) => m > after);
    const userIds = start < 0 ? [] : members.slice(start, start + pageSize);
    const last = userIds[userIds.length - 1];
    const more = start >= 0 && start + pageSize < members.length;
    return { userIds, ...(more && last ? { nextPageToken: Buffer.from(last).toString('base64url') } : {}) };
  }
}

/** A fake PreferenceBook: everything on unless turned off here. */
export class FakePreferences implements Pick<PreferenceBook, 'isEnabled'> {
  readonly off = new Set<string>();

  turnOff(userId: string, category: string, channel: NotifyChannel): void {
    this.off.add(`${userId}/${category}/${channel}`);
  }

  async isEnabled(userId: string, category: string, channel: NotifyChannel): Promise<boolean> {
    return !this.off.has(`${userId}/${category}/${channel}`);
  }
}

/** A fake TemplateRenderer: templates in a map, LiquidJS strict, locale fallback `es-MX` -> `es` -> `en`. */
export class FakeRenderer implements TemplateRenderer {
  readonly templates = new Map<string, TemplateContent>();
  private readonly liquid = new Liquid({ strictVariables: true, strictFilters: true });
  /** Parsed sources (as a real renderer caches them). */
  private readonly parsed = new Map<string, ReturnType<Liquid['parse']>>();
  /** Renders done (tests count them). */
  renders = 0;

  constructor(private readonly defaultLocale = 'en') {}

  set(category: string, channel: NotifyChannel, locale: string, content: TemplateContent): void {
    this.templates.set(`${category}/${channel}/${locale}`, content);
  }

  async render(input: RenderInput): Promise<Rendered | undefined> {
    this.renders++;
    const chain = [input.locale, input.locale.split('-')[0]!, this.defaultLocale].filter((l) => l !== '');
    let locale = '';
    let template: TemplateContent | undefined;
    for (const l of chain) {
      template = this.templates.get(`${input.category}/${input.channel}/${l}`);
      if (template) {
        locale = l;
        break;
      }
    }
    const parts = { ...template, ...input.override };
    if (!template && !input.override) return undefined;
    const scope = { data: input.data, user: input.user ?? {} };
    const content: Record<string, unknown> = {};
    for (const [name, source] of Object.entries(parts)) {
      if (typeof source !== 'string') {
        content[name] = source;
        continue;
      }
      try {
        let parsed = this.parsed.get(source);
        if (!parsed) this.parsed.set(source, (parsed = this.liquid.parse(source)));
        content[name] = await this.liquid.render(parsed, scope);
      } catch (err) {
        const match = /undefined variable: ([\w.]+)/.exec(String((err as Error).message));
        throw new InvalidArgumentError(`template variable ${match?.[1] ?? '?'} is missing from data`, 'data');
      }
    }
    return { content, locale: locale || this.defaultLocale };
  }
}

/** A fake `unsubscribeHeaders`: the RFC 8058 pair with a recognisable URL. */
export function fakeUnsubscribeHeaders(userId: string, category: string): Record<string, string> {
  return {
    'List-Unsubscribe': `<https://notify.example.com/unsubscribe/${encodeURIComponent(userId)}/${category}>`,
    'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
  };
}

// --- When to notify (issue 26): small fakes of the PORTS of notify/timing.ts and users/types.ts
// (CapLedger, DigestBook, quietHoursEnd), until the real ones (notify/caps/, notify/digest/,
// users/quiet-hours.ts) are merged; and recording send targets for the fake-clock rule tests.

/** A fake CapLedger: `limit` sends per user and channel, then refusals naming `cap` until `free()`. */
export class FakeCapLedger implements CapLedger {
  readonly taken: string[] = [];
  private readonly counts = new Map<string, number>();
  private readonly limits = new Map<TimedChannel, { limit: number; cap: string; nextFreeAt: Date }>();

  limit(channel: TimedChannel, limit: number, cap: string, nextFreeAt: Date): void {
    this.limits.set(channel, { limit, cap, nextFreeAt });
  }

  /** Every count forgotten (the window passed). */
  free(): void {
    this.counts.clear();
  }

  async take(userId: string, channel: TimedChannel): Promise<CapDecision> {
    const rule = this.limits.get(channel);
    const key = `${userId}/${channel}`;
    const count = this.counts.get(key) ?? 0;
    if (rule && count >= rule.limit) return { taken: false, cap: rule.cap, nextFreeAt: rule.nextFreeAt };
    this.counts.set(key, count + 1);
    this.taken.push(key);
    return { taken: true };
  }

  async eraseUser(userId: string): Promise<void> {
    for (const key of [...this.counts.keys()]) if (key.startsWith(`${userId}/`)) this.counts.delete(key);
  }
}

interface FakeDigest extends DigestState {
  scope: string;
  userId: string;
  category: string;
  channel: TimedChannel;
  key: string;
  windowStart: Date;
  owner: string | null;
  events: { notificationId: string; occurredAt: Date; data: Record<string, unknown> }[];
}

/** A fake DigestBook: one open digest per (scope, user, category, channel, key), due `windowMs` after its first event. */
export class FakeDigestBook implements DigestBook {
  readonly digests = new Map<string, FakeDigest>();
  private next = 0;

  constructor(
    private readonly clock: Clock,
    private readonly windowMs = 15 * 60_000,
  ) {}

  async add(event: DigestEvent): Promise<{ digestId: string; flushAt: Date }> {
    let open = [...this.digests.values()].find(
      (d) =>
        d.status === 'open' &&
        d.scope === event.scope &&
        d.userId === event.userId &&
        d.category === event.category &&
        d.channel === event.channel &&
        d.key === event.key,
    );
    if (!open) {
      const now = this.clock.now();
      open = {
        id: `00000000-0000-4000-8000-${String(++this.next).padStart(12, '0')}`,
        status: 'open',
        flushAt: new Date(now + this.windowMs),
        count: 0,
        messageId: null,
        error: null,
        scope: event.scope,
        userId: event.userId,
        category: event.category,
        channel: event.channel,
        key: event.key,
        windowStart: new Date(now),
        owner: null,
        events: [],
      };
      this.digests.set(open.id, open);
    }
    open.events.push({
      notificationId: event.notificationId,
      occurredAt: event.occurredAt,
      data: event.data,
    });
    open.count = open.events.length;
    return { digestId: open.id, flushAt: open.flushAt };
  }

  async claimDue(owner: string, _leaseMs: number, limit: number): Promise<DueDigest[]> {
    const now = this.clock.now();
    const due = [...this.digests.values()]
      .filter((d) => d.status === 'open' && d.flushAt.getTime() <= now && d.events.length > 0)
      .slice(0, limit);
    return due.map((d) => {
      d.status = 'sending';
      d.owner = owner;
      return {
        id: d.id,
        scope: d.scope,
        userId: d.userId,
        category: d.category,
        channel: d.channel,
        key: d.key,
        windowStart: d.windowStart,
        events: [...d.events].sort((a, b) => a.occurredAt.getTime() - b.occurredAt.getTime()),
      };
    });
  }

  async finish(
    digestId: string,
    owner: string,
    messageId: string | null,
    error: string | null,
  ): Promise<boolean> {
    const d = this.digests.get(digestId);
    if (!d || d.owner !== owner || d.status !== 'sending') return false;
    Object.assign(d, { status: 'sent', messageId, error, owner: null });
    return true;
  }

  async defer(digestId: string, owner: string, until: Date): Promise<boolean> {
    const d = this.digests.get(digestId);
    if (!d || d.owner !== owner || d.status !== 'sending') return false;
    Object.assign(d, { status: 'open', flushAt: until, owner: null });
    return true;
  }

  async get(digestId: string): Promise<DigestState | null> {
    const d = this.digests.get(digestId);
    if (!d) return null;
    return {
      id: d.id,
      status: d.status,
      flushAt: d.flushAt,
      count: d.count,
      messageId: d.messageId,
      error: d.error,
    };
  }

  async removeNotification(notificationId: string): Promise<number> {
    let removed = 0;
    for (const d of this.digests.values()) {
      if (d.status !== 'open') continue;
      const before = d.events.length;
      d.events = d.events.filter((e) => e.notificationId !== notificationId);
      removed += before - d.events.length;
      d.count = d.events.length;
      if (before > 0 && d.events.length === 0) d.status = 'cancelled';
    }
    return removed;
  }

  async eraseUser(userId: string): Promise<void> {
    for (const [id, d] of this.digests) if (d.userId === userId) this.digests.delete(id);
  }
}

/**
 * A fake `quietHoursEnd` for windows within one UTC day ("HH:MM" start before end, the zone
 * ignored): the window's end that day when `at` is inside it, else null.
 */
export const fakeQuietHoursEnd: QuietHoursEnd = (quiet, _timeZone, at) => {
  const minutes = at.getUTCHours() * 60 + at.getUTCMinutes();
  const toMin = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
  for (const w of quiet.windows) {
    if (minutes >= toMin(w.start) && minutes < toMin(w.end)) {
      const end = new Date(at);
      end.setUTCHours(0, toMin(w.end), 0, 0);
      return end;
    }
  }
  return null;
};

/** One message a recording target took. */
export interface Sent {
  channel: NotifyChannel;
  to: string;
  userId: string;
  title?: string;
  body?: string;
  subject?: string;
  text?: string;
  idempotencyKey?: string;
  id: string;
}

/** Send targets that record what they are given (the fake-clock rule tests; the app tests use the real ones). */
export class RecordingTargets implements FanOutTargets {
  readonly sent: Sent[] = [];
  private seq = 0;

  private record(s: Omit<Sent, 'id'>): string {
    // The same idempotency key answers the same id (as the pipeline does).
    const again = s.idempotencyKey ? this.sent.find((x) => x.idempotencyKey === s.idempotencyKey) : undefined;
    if (again) return again.id;
    const id = `00000000-0000-4000-9000-${String(++this.seq).padStart(12, '0')}`;
    this.sent.push({ ...s, id });
    return id;
  }

  private delivery(id: string): DeliveryView {
    return { id, status: 'queued' } as unknown as DeliveryView;
  }

  readonly inbox = {
    send: async (input: { userId: string; title: string; body: string }) =>
      ({
        id: this.record({
          channel: 'inbox',
          to: '',
          userId: input.userId,
          title: input.title,
          body: input.body,
        }),
      }) as never,
  };
  readonly email = {
    send: async (input: {
      to: string[];
      subject: string;
      text?: string;
      idempotencyKey?: string;
      userId?: string;
    }) =>
      ({
        delivery: this.delivery(
          this.record({
            channel: 'email',
            to: input.to[0]!,
            userId: input.userId ?? '',
            subject: input.subject,
            ...(input.text !== undefined ? { text: input.text } : {}),
            ...(input.idempotencyKey ? { idempotencyKey: input.idempotencyKey } : {}),
          }),
        ),
      }) as never,
  };
  readonly sms = {
    send: async (input: { to: string; body: string; idempotencyKey?: string; userId?: string }) =>
      ({
        delivery: this.delivery(
          this.record({
            channel: 'sms',
            to: input.to,
            userId: input.userId ?? '',
            text: input.body,
            ...(input.idempotencyKey ? { idempotencyKey: input.idempotencyKey } : {}),
          }),
        ),
      }) as never,
  };
  readonly push = {
    send: async (
      payload: { deviceToken: string; title?: string; body?: string },
      opts: { idempotencyKey?: string; userId?: string },
    ) =>
      this.delivery(
        this.record({
          channel: 'push',
          to: payload.deviceToken,
          userId: opts.userId ?? '',
          ...(payload.title !== undefined ? { title: payload.title } : {}),
          ...(opts.idempotencyKey ? { idempotencyKey: opts.idempotencyKey } : {}),
        }),
      ) as never,
  };

  configured(): boolean {
    return true;
  }

  of(channel: NotifyChannel, userId?: string): Sent[] {
    return this.sent.filter((s) => s.channel === channel && (userId === undefined || s.userId === userId));
  }
}
