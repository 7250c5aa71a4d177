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
import type { TopicPage, User, UserDirectory } from '../../../services/notification/users/types';

type DirectoryPart = Pick<UserDirectory, 'getUser' | 'findUser' | 'listTopicSubscribers'>;

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
