/**
 * The one behaviour suite of the PreferenceBook, run over every PreferenceStore (memory, PGlite,
 * PostgreSQL): what GetPreferences / UpdatePreferences, the admin page, Notify and the unsubscribe
 * link rely on.
 */
import { InvalidArgumentError, NotFoundError } from '../../../../shared/errors';
import type { NotifyConfig } from '../../../../services/notification/notify/config';
import { Preferences } from '../../../../services/notification/users/preferences';
import type { PreferenceStore } from '../../../../services/notification/users/preferences/store';
import { ManualClock } from '../../../support/manual-clock';
import { TEST_CATEGORIES, newUser } from './support';

/** What a backend's test file provides to the contract. */
export interface PreferenceBackend {
  store: PreferenceStore;
  close(): Promise<void>;
}

/** Registers the contract suite for one store backend. */
export function describePreferenceContract(name: string, open: () => Promise<PreferenceBackend>): void {
  describe(`${name}: preference contract`, () => {
    let backend: PreferenceBackend;
    const unknown = new Set<string>();

    beforeAll(async () => {
      backend = await open();
    });

    afterAll(async () => {
      await backend?.close();
    });

    function book(
      categories: NotifyConfig['categories'] = TEST_CATEGORIES,
      clock = new ManualClock(),
    ): Preferences {
      return new Preferences({
        store: backend.store,
        categories,
        userExists: async (userId) => !unknown.has(userId),
        clock,
      });
    }

    it('when a user made no choice, get returns every category channel with its default, in config order', async () => {
      const prefs = await book().get(newUser());
      expect(prefs).toEqual([
        { category: 'security', channel: 'inbox', enabled: true, required: true, chosen: false },
        { category: 'security', channel: 'email', enabled: true, required: true, chosen: false },
        { category: 'security', channel: 'sms', enabled: true, required: true, chosen: false },
        { category: 'comments', channel: 'inbox', enabled: true, required: false, chosen: false },
        { category: 'comments', channel: 'email', enabled: true, required: false, chosen: false },
        { category: 'comments', channel: 'push', enabled: false, required: false, chosen: false },
        { category: 'news', channel: 'email', enabled: true, required: false, chosen: false },
        { category: 'news', channel: 'sms', enabled: false, required: false, chosen: false },
      ]);
    });

    it('when a user turns a channel off and another on, get and isEnabled show the choices', async () => {
      const b = book();
      const user = newUser();
      const after = await b.update(user, [
        { category: 'comments', channel: 'email', enabled: false },
        { category: 'news', channel: 'sms', enabled: true },
      ]);
      expect(after).toContainEqual({
        category: 'comments',
        channel: 'email',
        enabled: false,
        required: false,
        chosen: true,
      });
      expect(after).toContainEqual({
        category: 'news',
        channel: 'sms',
        enabled: true,
        required: false,
        chosen: true,
      });
      expect(await b.get(user)).toEqual(after);
      expect(await b.isEnabled(user, 'comments', 'email')).toBe(false);
      expect(await b.isEnabled(user, 'news', 'sms')).toBe(true);
      // Untouched channels keep their defaults.
      expect(await b.isEnabled(user, 'comments', 'inbox')).toBe(true);
      expect(await b.isEnabled(user, 'comments', 'push')).toBe(false);
    });

    it('when a choice is made again with the other value, the later one wins', async () => {
      const b = book();
      const user = newUser();
      await b.update(user, [{ category: 'comments', channel: 'email', enabled: false }]);
      await b.update(user, [{ category: 'comments', channel: 'email', enabled: true }]);
      expect(await b.isEnabled(user, 'comments', 'email')).toBe(true);
      const pref = (await b.get(user)).find((p) => p.category === 'comments' && p.channel === 'email');
      expect(pref).toMatchObject({ enabled: true, chosen: true });
    });

    it('when a required category channel is turned off, update is refused naming it and records nothing', async () => {
      const b = book();
      const user = newUser();
      const attempt = b.update(user, [
        { category: 'comments', channel: 'email', enabled: false },
        { category: 'security', channel: 'sms', enabled: false },
      ]);
      await expect(attempt).rejects.toThrow(InvalidArgumentError);
      await expect(attempt).rejects.toThrow(/"security" is required/);
      // All or nothing: the valid entry before it was not recorded either.
      expect(await b.isEnabled(user, 'comments', 'email')).toBe(true);
      expect((await b.get(user)).some((p) => p.chosen)).toBe(false);
    });

    it('when a required category channel is turned on, update accepts it and it stays on', async () => {
      const b = book();
      const user = newUser();
      await b.update(user, [{ category: 'security', channel: 'email', enabled: true }]);
      expect(await b.isEnabled(user, 'security', 'email')).toBe(true);
    });

    it('when a category is unknown, update is refused listing the configured ones', async () => {
      const attempt = book().update(newUser(), [{ category: 'promos', channel: 'email', enabled: false }]);
      await expect(attempt).rejects.toThrow(InvalidArgumentError);
      await expect(attempt).rejects.toThrow(/unknown category "promos".*security, comments, news/);
    });

    it('when a channel is one the category does not use, update is refused naming both', async () => {
      const attempt = book().update(newUser(), [{ category: 'news', channel: 'push', enabled: true }]);
      await expect(attempt).rejects.toThrow(InvalidArgumentError);
      await expect(attempt).rejects.toThrow(/category "news" does not use channel "push"/);
    });

    it('when a channel is not a channel at all, update is refused', async () => {
      const attempt = book().update(newUser(), [
        { category: 'news', channel: 'fax' as 'email', enabled: true },
      ]);
      await expect(attempt).rejects.toThrow(InvalidArgumentError);
      await expect(attempt).rejects.toThrow(/channel "fax"/);
    });

    it('when the same category channel is listed twice, update is refused', async () => {
      const attempt = book().update(newUser(), [
        { category: 'news', channel: 'email', enabled: true },
        { category: 'news', channel: 'email', enabled: false },
      ]);
      await expect(attempt).rejects.toThrow(/listed twice/);
    });

    it('when the list is longer than categories x 4, update is refused; at the bound it is taken', async () => {
      const b = book();
      const user = newUser();
      const bound = TEST_CATEGORIES.length * 4;
      const tooMany = Array.from({ length: bound + 1 }, () => ({
        category: 'news',
        channel: 'email' as const,
        enabled: true,
      }));
      await expect(b.update(user, tooMany)).rejects.toThrow(new RegExp(`at most ${bound}`));
      // At the bound the length rule passes and the next rule speaks (duplicates here).
      await expect(b.update(user, tooMany.slice(1))).rejects.toThrow(/listed twice/);
    });

    it('when the user is unknown, get and update are NOT_FOUND', async () => {
      const b = book();
      const ghost = newUser('ghost');
      unknown.add(ghost);
      await expect(b.get(ghost)).rejects.toThrow(NotFoundError);
      await expect(b.update(ghost, [{ category: 'news', channel: 'email', enabled: false }])).rejects.toThrow(
        NotFoundError,
      );
    });

    it('when an update lists nothing, it changes nothing and returns the effective preferences', async () => {
      const b = book();
      const user = newUser();
      expect(await b.update(user, [])).toEqual(await b.get(user));
    });

    it('when a category is later removed from config, its stored choices are ignored on read', async () => {
      const withDigest: NotifyConfig['categories'] = [
        ...TEST_CATEGORIES,
        { name: 'digest', channels: ['email'], required: false, defaults: {}, description: '' },
      ];
      const user = newUser();
      await book(withDigest).update(user, [
        { category: 'digest', channel: 'email', enabled: false },
        { category: 'comments', channel: 'push', enabled: true },
      ]);
      const now = book();
      expect((await now.get(user)).map((p) => p.category)).not.toContain('digest');
      expect(await now.isEnabled(user, 'digest', 'email')).toBe(false);
      // A choice for a channel the category no longer uses is ignored too.
      const narrowed = TEST_CATEGORIES.map((c) =>
        c.name === 'comments' ? { ...c, channels: ['inbox' as const] } : c,
      );
      expect(await book(narrowed).isEnabled(user, 'comments', 'push')).toBe(false);
      // And the remaining choice still reads back.
      expect(await now.isEnabled(user, 'comments', 'push')).toBe(true);
    });

    it('when a category becomes required, an earlier "off" choice no longer holds', async () => {
      const user = newUser();
      await book().update(user, [{ category: 'news', channel: 'email', enabled: false }]);
      const required = TEST_CATEGORIES.map((c) => (c.name === 'news' ? { ...c, required: true } : c));
      expect(await book(required).isEnabled(user, 'news', 'email')).toBe(true);
      expect(
        (await book(required).get(user)).find((p) => p.category === 'news' && p.channel === 'email'),
      ).toMatchObject({ enabled: true, required: true });
    });

    it('isEnabled is false for a channel the category lacks or an unknown category, true for a required one', async () => {
      const b = book();
      const user = newUser();
      expect(await b.isEnabled(user, 'news', 'push')).toBe(false);
      expect(await b.isEnabled(user, 'promos', 'email')).toBe(false);
      expect(await b.isEnabled(user, 'security', 'sms')).toBe(true);
    });

    it('when a user is erased, their choices are gone and another user keeps theirs', async () => {
      const b = book();
      const [gone, kept] = [newUser(), newUser()];
      await b.update(gone, [{ category: 'news', channel: 'email', enabled: false }]);
      await b.update(kept, [{ category: 'news', channel: 'email', enabled: false }]);
      await b.eraseUser(gone);
      expect((await b.get(gone)).some((p) => p.chosen)).toBe(false);
      expect(await b.isEnabled(kept, 'news', 'email')).toBe(false);
    });

    it('when user ids hold emoji, CJK and RTL text, each keeps its own choices', async () => {
      const b = book();
      const ids = [`😀-${newUser()}`, `用户-${newUser()}`, `مستخدم-${newUser()}`];
      for (const [i, id] of ids.entries()) {
        await b.update(id, [{ category: 'news', channel: 'email', enabled: i % 2 === 0 }]);
      }
      expect(await Promise.all(ids.map((id) => b.isEnabled(id, 'news', 'email')))).toEqual([
        true,
        false,
        true,
      ]);
    });

    it('when a user id is 128 code points of emoji it is taken, at 129 or empty it is refused', async () => {
      const b = book();
      const at = '😀'.repeat(128);
      await b.update(at, [{ category: 'news', channel: 'email', enabled: false }]);
      expect(await b.isEnabled(at, 'news', 'email')).toBe(false);
      await b.eraseUser(at);
      await expect(b.get('😀'.repeat(129))).rejects.toThrow(/user_id/);
      await expect(b.get('')).rejects.toThrow(InvalidArgumentError);
      await expect(b.get('a\0b')).rejects.toThrow(InvalidArgumentError);
    });
  });
}
