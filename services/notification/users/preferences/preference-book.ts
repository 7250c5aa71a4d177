/**
 * Preferences: the PreferenceBook of `types.ts`. It holds the rules (configured categories, their
 * channels, required categories, defaults, the bounds); the store only keeps the choices users made.
 * The effective value of a category channel is the user's choice, else `defaults[channel]`, else on;
 * a required category is always on. Choices for a category or channel no longer configured stay in
 * the store and are ignored.
 */
import { InvalidArgumentError, NotFoundError } from '../../../../shared/errors';
import { type Clock, dateReader } from '../../../../shared/runtime/clock';
import { cutText } from '../../../../shared/text/cut';
import { checkText, replaceControlCharacters } from '../../../../shared/text/check';
import { type CategoryConfig, NOTIFY_CHANNELS, type NotifyChannel } from '../../notify/config';
import type { Preference, PreferenceBook, PreferenceChoice } from './types';
import type { PreferenceStore, StoredChoice } from './store';

/** Longest user id, in code points (UserService: 1-128 characters). */
export const MAX_USER_ID_LENGTH = 128;
/** Entries of one update, per configured category (one per channel at most). */
export const MAX_CHOICES_PER_CATEGORY = NOTIFY_CHANNELS.length;

/** What Preferences needs. */
export interface PreferencesOptions {
  store: PreferenceStore;
  /** `notify.categories`, validated. */
  categories: readonly CategoryConfig[];
  /** Whether the user is in the directory (the users area's `findUser`); false: NOT_FOUND. */
  userExists(userId: string): Promise<boolean>;
  clock?: Clock;
}

/** The PreferenceBook over a PreferenceStore. */
export class Preferences implements PreferenceBook {
  private readonly store: PreferenceStore;
  private readonly byName: ReadonlyMap<string, CategoryConfig>;
  private readonly userExists: (userId: string) => Promise<boolean>;
  private readonly now: () => Date;

  constructor(options: PreferencesOptions) {
    this.store = options.store;
    this.byName = new Map(options.categories.map((c) => [c.name, c]));
    this.userExists = options.userExists;
    this.now = dateReader(options.clock);
  }

  /** The configured categories, in config order (the admin page shows their descriptions). */
  get categories(): readonly CategoryConfig[] {
    return [...this.byName.values()];
  }

  async get(userId: string): Promise<Preference[]> {
    checkUserId(userId);
    await this.requireUser(userId);
    return this.effective(await this.store.read(userId));
  }

  async update(userId: string, choices: PreferenceChoice[]): Promise<Preference[]> {
    checkUserId(userId);
    const valid = this.validate(choices);
    await this.requireUser(userId);
    await this.store.write(userId, valid, this.now());
    return this.effective(await this.store.read(userId));
  }

  async isEnabled(userId: string, category: string, channel: NotifyChannel): Promise<boolean> {
    const cat = this.byName.get(category);
    if (!cat || !cat.channels.includes(channel)) return false;
    if (cat.required) return true;
    return (await this.store.readOne(userId, category, channel)) ?? defaultOf(cat, channel);
  }

  async eraseUser(userId: string): Promise<void> {
    await this.store.erase(userId);
  }

  private async requireUser(userId: string): Promise<void> {
    if (!(await this.userExists(userId))) throw new NotFoundError('user not found');
  }

  /** Every entry checked before anything is written: the update is all or nothing. */
  private validate(choices: readonly PreferenceChoice[]): StoredChoice[] {
    const max = this.byName.size * MAX_CHOICES_PER_CATEGORY;
    if (choices.length > max) {
      throw new InvalidArgumentError(
        `preferences lists ${choices.length} entries; at most ${max} (each configured category's channels once)`,
        'preferences',
      );
    }
    const seen = new Set<string>();
    return choices.map((choice, i) => {
      const field = `preferences[${i}]`;
      const cat = this.byName.get(choice.category);
      if (!cat) {
        const known = [...this.byName.keys()];
        throw new InvalidArgumentError(
          `${field}: unknown category "${printable(choice.category)}"; configured: ${
            known.length > 0 ? known.join(', ') : '(none)'
          }`,
          `${field}.category`,
        );
      }
      if (!(NOTIFY_CHANNELS as readonly string[]).includes(choice.channel)) {
        throw new InvalidArgumentError(
          `${field}: unknown channel "${printable(choice.channel)}"; one of ${NOTIFY_CHANNELS.join(', ')}`,
          `${field}.channel`,
        );
      }
      if (!cat.channels.includes(choice.channel)) {
        throw new InvalidArgumentError(
          `${field}: category "${cat.name}" does not use channel "${choice.channel}"; it uses ${cat.channels.join(', ')}`,
          `${field}.channel`,
        );
      }
      if (typeof choice.enabled !== 'boolean') {
        throw new InvalidArgumentError(`${field}: enabled must be true or false`, `${field}.enabled`);
      }
      if (cat.required && !choice.enabled) {
        throw new InvalidArgumentError(
          `${field}: category "${cat.name}" is required and cannot be turned off`,
          `${field}.enabled`,
        );
      }
      const key = `${cat.name}/${choice.channel}`;
      if (seen.has(key)) {
        throw new InvalidArgumentError(`${field}: ${key} is listed twice`, field);
      }
      seen.add(key);
      return { category: cat.name, channel: choice.channel, enabled: choice.enabled };
    });
  }

  private effective(stored: readonly StoredChoice[]): Preference[] {
    const chosen = new Map(stored.map((c) => [`${c.category}/${c.channel}`, c.enabled]));
    const out: Preference[] = [];
    for (const cat of this.byName.values()) {
      for (const channel of cat.channels) {
        const choice = chosen.get(`${cat.name}/${channel}`);
        out.push({
          category: cat.name,
          channel,
          enabled: cat.required ? true : (choice ?? defaultOf(cat, channel)),
          required: cat.required,
          chosen: choice !== undefined,
        });
      }
    }
    return out;
  }
}

function defaultOf(cat: CategoryConfig, channel: NotifyChannel): boolean {
  return cat.defaults[channel] ?? true;
}

/** A user id of 1-128 code points, no control characters, storable text (the directory's rule). */
export function checkUserId(userId: string): void {
  checkText(userId, 'user_id', { max: MAX_USER_ID_LENGTH, required: 'non_empty' });
}

/** A caller's value echoed in an error: short, on code points, no control characters. */
function printable(value: unknown): string {
  const text = typeof value === 'string' ? value : String(value);
  const clean = replaceControlCharacters(text, '?');
  return cutText(clean, 65, { unit: 'code_point', ellipsis: '…' });
}
