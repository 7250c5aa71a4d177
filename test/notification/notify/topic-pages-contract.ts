/**
 * The topic fan-out a group at a time (issue 30) over a real NotificationStore (memory, PGlite,
 * PostgreSQL): each group's users are read in one `findUsers` and its fan-outs saved in one
 * `saveFanOuts`; a topic larger than one page reaches each member exactly once, also when the job
 * dies mid page and is taken up again; an opted-out member gets nothing, a deleted one neither.
 */
import { randomUUID } from 'node:crypto';
import type { User } from '../../../services/notification/users/types';
import { NotifyConfigSchema } from '../../../services/notification/notify/config';
import { Notifier } from '../../../services/notification/notify/notifier';
import type { FanOutResult, NotificationStore } from '../../../services/notification/notify/store';
import { TopicFanOut } from '../../../services/notification/notify/topic-fan-out';
import {
  FakeDirectory,
  FakePreferences,
  FakeRenderer,
  fakeUnsubscribeHeaders,
  RecordingTargets,
} from './fakes';

const PAGE = 5;
const GROUP = 2;
const MEMBERS = 13; // Two full pages and a part: larger than one page, groups cut across pages.

/** The directory, counting group reads; `failAt` makes that call (1-based) throw (the process dies). */
class CountingDirectory extends FakeDirectory {
  findUsersCalls = 0;
  failAt = 0;

  override async findUsers(userIds: readonly string[]): Promise<Map<string, User>> {
    this.findUsersCalls++;
    if (this.findUsersCalls === this.failAt) throw new Error('process died');
    return super.findUsers(userIds);
  }
}

/** The store, counting group saves; `failAt` makes that save throw before anything is written. */
function counting(store: NotificationStore): NotificationStore & { saves: number; failAt: number } {
  const wrapped = Object.create(store) as NotificationStore & { saves: number; failAt: number };
  wrapped.saves = 0;
  wrapped.failAt = 0;
  wrapped.saveFanOuts = async (entries: readonly FanOutResult[]) => {
    wrapped.saves++;
    if (wrapped.saves === wrapped.failAt) throw new Error('process died');
    return store.saveFanOuts(entries);
  };
  return wrapped;
}

function setup(base: NotificationStore, channels: ('inbox' | 'email')[]) {
  const store = counting(base);
  const directory = new CountingDirectory();
  const renderer = new FakeRenderer();
  renderer.set('news', 'inbox', 'en', { title: 'News 📦 {{ data.week }}', body: 'هذا الأسبوع 本周' });
  renderer.set('news', 'email', 'en', { subject: 'News {{ data.week }}', text: 'هذا الأسبوع 本周 😀' });
  const targets = new RecordingTargets();
  const preferences = new FakePreferences();
  const notifier = new Notifier({
    config: NotifyConfigSchema.parse({ categories: [{ name: 'news', channels }], topic_page_size: PAGE }),
    store,
    directory,
    preferences,
    renderer,
    unsubscribeHeaders: fakeUnsubscribeHeaders,
    targets,
    deliveries: { get: async (id: string) => ({ id, status: 'queued' }) as never },
  });
  const runner = (owner: string) =>
    new TopicFanOut({
      store,
      directory,
      fanOut: notifier.fanOut,
      category: (name) => notifier.category(name),
      pageSize: PAGE,
      concurrency: GROUP,
      owner,
    });
  const topic = `weekly-${randomUUID()}`;
  const members = Array.from(
    { length: MEMBERS },
    (_, i) => `member-${String(i).padStart(2, '0')}-${randomUUID()}`,
  );
  for (const userId of members) directory.add({ userId, emails: [`${userId}@example.com`] });
  directory.subscribe(topic, members);
  const notify = async () =>
    (
      await notifier.notify(
        {
          userId: '',
          topic,
          category: 'news',
          data: { week: '48 😀' },
          overrides: [],
          priority: 'normal',
          idempotencyKey: '',
        },
        `scope-${randomUUID()}`,
      )
    ).notification;
  return { store, directory, targets, preferences, runner, members, notify };
}

/** How many sends of `channel` each member got. */
function sendsOf(targets: RecordingTargets, channel: string, members: readonly string[]): number[] {
  return members.map((m) => targets.sent.filter((s) => s.channel === channel && s.userId === m).length);
}

export function describeTopicPages(name: string, open: () => Promise<NotificationStore>): void {
  describe(`${name}: topic fan-out a group at a time`, () => {
    it('a topic larger than one page reaches each member exactly once, reading users and saving fan-outs once per group; an opted-out member gets nothing, a deleted one neither', async () => {
      const s = setup(await open(), ['inbox', 'email']);
      const optedOut = s.members[6]!; // On the second page.
      s.preferences.turnOff(optedOut, 'news', 'inbox');
      s.preferences.turnOff(optedOut, 'news', 'email');
      const deleted = s.members[11]!;
      s.directory.users.delete(deleted);
      const parent = await s.notify();

      expect(await s.runner('one').runOnce()).toBe(true);

      const expected = s.members.map((m) => (m === optedOut || m === deleted ? 0 : 1));
      expect(sendsOf(s.targets, 'inbox', s.members)).toEqual(expected);
      expect(sendsOf(s.targets, 'email', s.members)).toEqual(expected);
      expect(s.targets.sent.find((x) => x.channel === 'inbox')!.title).toBe('News 📦 48 😀');
      // Pages of 5 in groups of 2: 3 groups a page, 3 pages (5, 5, 3) -> 3 + 3 + 2 groups.
      const groups = 3 + 3 + 2;
      expect(s.directory.findUsersCalls).toBe(groups);
      expect(s.store.saves).toBe(groups);

      const done = await s.store.get(parent.id);
      expect(done!.status).toBe('fanned_out');
      for (const child of await children(s.store, parent.id, s.members)) {
        expect(child.status).toBe('fanned_out');
        if (child.userId === optedOut) {
          expect(child.channels.map((l) => [l.channel, l.skipped])).toEqual([
            ['inbox', 'preference_off'],
            ['email', 'preference_off'],
          ]);
        } else if (child.userId === deleted) {
          expect(child.channels).toEqual([]);
        } else {
          expect(child.channels.map((l) => [l.channel, l.skipped, l.messageId !== null])).toEqual([
            ['inbox', null, true],
            ['email', null, true],
          ]);
        }
      }
    });

    it('a job that dies mid page (after a group was saved) and is taken up again sends no one twice', async () => {
      const s = setup(await open(), ['inbox', 'email']);
      const parent = await s.notify();
      // Page 2, group 2: groups 1-4 (7 members) are saved, then the process dies.
      s.directory.failAt = 5;
      await expect(s.runner('first').runOnce()).rejects.toThrow('process died');
      // A page's members go in the store's order (not user order): count them.
      const sentBefore = sendsOf(s.targets, 'inbox', s.members);
      expect(sentBefore.filter((n) => n === 1)).toHaveLength(7);
      expect(sentBefore.filter((n) => n > 1)).toEqual([]);
      // The first owner's lease runs out (released here: the store's clock is the database's).
      await s.store.releaseTopicJob(parent.id, 'first');

      expect(await s.runner('second').runOnce()).toBe(true);

      expect(sendsOf(s.targets, 'inbox', s.members)).toEqual(s.members.map(() => 1));
      expect(sendsOf(s.targets, 'email', s.members)).toEqual(s.members.map(() => 1));
      expect((await s.store.get(parent.id))!.status).toBe('fanned_out');
    });

    it('a job that dies after a group was sent but before its save submits no delivery twice when redone (same keys, same deliveries)', async () => {
      // Email only: deliveries are keyed by notification, channel and contact (the inbox has no key:
      // README, "Idempotency").
      const s = setup(await open(), ['email']);
      const parent = await s.notify();
      s.store.failAt = 4; // Page 2, group 1: its 2 members sent, not saved (7 sent in all).
      await expect(s.runner('first').runOnce()).rejects.toThrow('process died');
      const sentBefore = sendsOf(s.targets, 'email', s.members);
      expect(sentBefore.filter((n) => n === 1)).toHaveLength(7);
      expect(sentBefore.filter((n) => n > 1)).toEqual([]);
      await s.store.releaseTopicJob(parent.id, 'first');

      expect(await s.runner('second').runOnce()).toBe(true);

      // One submission per member (the redone group's sends answered the same deliveries).
      expect(sendsOf(s.targets, 'email', s.members)).toEqual(s.members.map(() => 1));
      const lines = (await children(s.store, parent.id, s.members)).map((c) => c.channels[0]!.messageId);
      expect(new Set(lines).size).toBe(MEMBERS);
      expect((await s.store.get(parent.id))!.status).toBe('fanned_out');
    });
  });
}

/** The member notifications of `parentId`, one per member (none twice). */
async function children(store: NotificationStore, parentId: string, members: readonly string[]) {
  const found = [];
  for (const userId of members) {
    const page = await store.listAll({ userId }, 10);
    const mine = page.records.filter((r) => r.parentId === parentId);
    expect(mine).toHaveLength(1);
    found.push(mine[0]!);
  }
  return found;
}
