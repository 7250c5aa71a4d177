/**
 * The one behaviour suite every UserStore passes, through UserDirectoryService the way the RPC layer
 * and Notify use it: validation and normal forms, bounds at the bound, devices moving between users,
 * topics paged by user id, DeleteUser and its erasers. Tests share a database per file: ids are unique.
 */
import { InvalidArgumentError, NotFoundError } from '../../../shared/errors';
import { UsersConfigSchema, type UsersConfig } from '../../../services/notification/users/config';
import type { UserStore } from '../../../services/notification/users/store';
import { UserDirectoryService } from '../../../services/notification/users/user-directory';
import { MAX_QUIET_WINDOWS, type UserInput } from '../../../services/notification/users/types';

/** What a backend's test file provides to the contract. */
export interface UsersContractBackend {
  store: UserStore;
  close(): Promise<void>;
}

let counter = 0;
/** A user id no other test uses. */
export function newUserId(prefix = 'u'): string {
  return `${prefix}-${Date.now().toString(36)}-${(counter++).toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

/** A minimal UpsertUser input. */
export function userInput(userId: string, more: Partial<UserInput> = {}): UserInput {
  return { userId, emails: [], phones: [], locale: '', timeZone: '', attributes: {}, ...more };
}

/** A manual wall clock. */
class StepClock {
  ms = Date.parse('2026-11-27T10:00:00.000Z');
  monotonic = () => this.ms;
  now = () => this.ms;
  step(by = 1000) {
    this.ms += by;
  }
}

/** Registers the contract suite for one store. */
export function describeUsersContract(name: string, open: () => Promise<UsersContractBackend>): void {
  describe(`${name}: user directory contract`, () => {
    let backend: UsersContractBackend;

    beforeAll(async () => {
      backend = await open();
    });
    afterAll(async () => {
      await backend?.close();
    });

    function make(overrides: Partial<UsersConfig> = {}, maxTopicBatch = 1000) {
      const clock = new StepClock();
      const directory = new UserDirectoryService({
        store: backend.store,
        config: UsersConfigSchema.parse(overrides),
        maxTopicBatch,
        pushBackends: ['apns-main', 'fcm-main'],
        clock,
      });
      return { directory, clock };
    }

    async function invalid(run: () => Promise<unknown>, field: string): Promise<InvalidArgumentError> {
      const err = await run().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect((err as InvalidArgumentError).field).toBe(field);
      return err as InvalidArgumentError;
    }

    describe('UpsertUser and GetUser', () => {
      it('when a user is upserted, GetUser returns the normalised fields; a second upsert replaces them whole', async () => {
        const { directory, clock } = make();
        const id = newUserId();
        const first = await directory.upsertUser(
          userInput(id, {
            emails: [' Jane.Doe@Example.COM ', 'jane.doe@example.com', 'other@example.org'],
            phones: ['+34 600-123-456', '+34600123456'],
            locale: 'es-mx',
            timeZone: 'europe/madrid',
            attributes: { plan: 'pro', name: 'Jösé 😀 中文 עברית' },
          }),
        );
        expect(first.created).toBe(true);
        // The local part keeps its case; the domain is lower-cased; duplicates go (first kept).
        expect(first.user).toMatchObject({
          userId: id,
          emails: ['Jane.Doe@example.com', 'other@example.org'],
          phones: ['+34600123456'],
          locale: 'es-MX',
          timeZone: 'Europe/Madrid',
          attributes: { plan: 'pro', name: 'Jösé 😀 中文 עברית' },
          devices: [],
        });
        clock.step();
        const second = await directory.upsertUser(userInput(id, { emails: ['new@example.net'] }));
        expect(second.created).toBe(false);
        const read = await directory.getUser(id);
        expect(read).toMatchObject({
          emails: ['new@example.net'],
          phones: [],
          locale: '',
          timeZone: '',
          attributes: {},
        });
        expect(read.createdAt.getTime()).toBe(first.user.createdAt.getTime());
        expect(read.updatedAt.getTime()).toBeGreaterThan(read.createdAt.getTime());
      });

      it('when the user is unknown, GetUser is NOT_FOUND and findUser undefined', async () => {
        const { directory } = make();
        await expect(directory.getUser(newUserId())).rejects.toBeInstanceOf(NotFoundError);
        expect(await directory.findUser(newUserId())).toBeUndefined();
      });

      it('findUsers reads several users at once as findUser does (devices in registration order), leaving unknown ones out', async () => {
        const { directory } = make();
        const a = newUserId('😀-用户-');
        const b = newUserId('משתמש-');
        const unknown = newUserId();
        await directory.upsertUser(userInput(a, { emails: ['a@example.com'] }));
        await directory.upsertUser(userInput(b));
        await directory.registerDevice(b, { token: `tok-2-${b}`.padEnd(20, 'x'), platform: 'fcm' });
        await directory.registerDevice(b, { token: `tok-1-${b}`.padEnd(20, 'x'), platform: 'apns' });
        const found = await directory.findUsers([a, unknown, b, a]);
        expect([...found.keys()].sort()).toEqual([a, b].sort());
        expect(found.get(a)).toEqual(await directory.findUser(a));
        expect(found.get(b)).toEqual(await directory.findUser(b));
        expect(found.get(b)!.devices).toHaveLength(2);
        expect((await directory.findUsers([])).size).toBe(0);
        expect((await directory.findUsers([unknown])).size).toBe(0);
      });

      it('user ids of emoji, CJK and RTL text up to 128 characters are kept whole; 129, empty or control characters are refused', async () => {
        const { directory } = make();
        const widest = '😀'.repeat(127) + String(counter++ % 10);
        const mixed = `中文-עברית-${newUserId()}`;
        for (const id of [widest, mixed]) {
          await directory.upsertUser(userInput(id));
          expect((await directory.getUser(id)).userId).toBe(id);
        }
        await invalid(() => directory.upsertUser(userInput('😀'.repeat(129))), 'user_id');
        await invalid(() => directory.upsertUser(userInput('')), 'user_id');
        await invalid(() => directory.upsertUser(userInput('a\u0000b')), 'user_id');
        await invalid(() => directory.upsertUser(userInput('a\nb')), 'user_id');
        await invalid(() => directory.upsertUser(userInput('a\ud83db')), 'user_id');
      });

      it('bad emails, phones, locale and time zone are INVALID_ARGUMENT naming the field, and nothing is stored', async () => {
        const { directory } = make();
        const id = newUserId();
        await invalid(() => directory.upsertUser(userInput(id, { emails: ['not-an-address'] })), 'emails[0]');
        await invalid(
          () => directory.upsertUser(userInput(id, { emails: ['a@b.com', 'Jane <j@b.com>'] })),
          'emails[1]',
        );
        await invalid(() => directory.upsertUser(userInput(id, { emails: ['a@localhost'] })), 'emails[0]');
        await invalid(() => directory.upsertUser(userInput(id, { phones: ['600123456'] })), 'phones[0]');
        await invalid(() => directory.upsertUser(userInput(id, { locale: 'not a locale!' })), 'locale');
        await invalid(() => directory.upsertUser(userInput(id, { timeZone: 'Mars/Olympus' })), 'time_zone');
        await expect(directory.getUser(id)).rejects.toBeInstanceOf(NotFoundError);
      });

      it('lists are bounded at their limit after duplicates are removed', async () => {
        const { directory } = make({ max_emails: 2, max_phones: 2 });
        const id = newUserId();
        // Three given, two distinct: fits.
        await directory.upsertUser(userInput(id, { emails: ['a@x.com', 'A@X.COM', 'b@x.com'] }));
        const e = await invalid(
          () => directory.upsertUser(userInput(id, { emails: ['a@x.com', 'b@x.com', 'c@x.com'] })),
          'emails',
        );
        expect(e.message).toContain('at most 2');
        await directory.upsertUser(userInput(id, { phones: ['+15550000001', '+15550000002'] }));
        await invalid(
          () =>
            directory.upsertUser(userInput(id, { phones: ['+15550000001', '+15550000002', '+15550000003'] })),
          'phones',
        );
      });

      it('attributes are bounded in UTF-8 bytes at the bound, and must be storable JSON', async () => {
        const { directory } = make({ max_attributes_bytes: 64 });
        const id = newUserId();
        // {"k":"…"} is 8 bytes of JSON around the value: 56 bytes of value fit, 14 emoji of 4 bytes each.
        const fits = { k: '😀'.repeat(14) };
        expect(Buffer.byteLength(JSON.stringify(fits))).toBe(64);
        await directory.upsertUser(userInput(id, { attributes: fits }));
        expect((await directory.getUser(id)).attributes).toEqual(fits);
        await invalid(
          () => directory.upsertUser(userInput(id, { attributes: { k: '😀'.repeat(14) + 'x' } })),
          'attributes',
        );
        await invalid(
          () => directory.upsertUser(userInput(id, { attributes: { k: 'a\u0000b' } })),
          'attributes',
        );
        await invalid(
          () => directory.upsertUser(userInput(id, { attributes: { k: 'a\ud83d' } })),
          'attributes',
        );
        // A literal backslash-u in text is fine.
        await directory.upsertUser(userInput(id, { attributes: { k: '\\u0000' } }));
        expect((await directory.getUser(id)).attributes).toEqual({ k: '\\u0000' });
      });
    });

    describe('quiet hours', () => {
      const night = { days: [5, 1, 2], start: '22:00', end: '07:00' };
      const lunch = { days: [], start: '13:00', end: '14:30' };

      it('UpsertUser stores quiet hours (days in order), GetUser shows them; a second upsert replaces them whole, unset means none', async () => {
        const { directory } = make();
        const id = newUserId();
        const first = await directory.upsertUser(
          userInput(id, {
            timeZone: 'Europe/Madrid',
            quietHours: { windows: [night, lunch], holdEmail: true },
          }),
        );
        const expected = {
          windows: [{ days: [1, 2, 5], start: '22:00', end: '07:00' }, lunch],
          holdEmail: true,
        };
        expect(first.user.quietHours).toEqual(expected);
        expect((await directory.getUser(id)).quietHours).toEqual(expected);
        await directory.upsertUser(userInput(id, { quietHours: { windows: [lunch], holdEmail: false } }));
        expect((await directory.getUser(id)).quietHours).toEqual({ windows: [lunch], holdEmail: false });
        await directory.upsertUser(userInput(id));
        expect((await directory.getUser(id)).quietHours).toEqual({ windows: [], holdEmail: false });
        expect((await directory.findUser(id))!.quietHours).toEqual({ windows: [], holdEmail: false });
      });

      it('a user without quiet hours reads back none; MAX_QUIET_WINDOWS windows fit, one more is refused', async () => {
        const { directory } = make();
        const id = newUserId();
        expect((await directory.upsertUser(userInput(id))).user.quietHours).toEqual({
          windows: [],
          holdEmail: false,
        });
        const many = Array.from({ length: MAX_QUIET_WINDOWS }, (_, i) => ({
          days: [(i % 7) + 1],
          start: `0${i % 10}:00`.slice(-5),
          end: `0${i % 10}:30`.slice(-5),
        }));
        await directory.upsertUser(userInput(id, { quietHours: { windows: many, holdEmail: false } }));
        expect((await directory.getUser(id)).quietHours.windows).toHaveLength(MAX_QUIET_WINDOWS);
        const err = await invalid(
          () =>
            directory.upsertUser(
              userInput(id, { quietHours: { windows: [...many, lunch], holdEmail: false } }),
            ),
          'quiet_hours.windows',
        );
        expect(err.message).toContain(String(MAX_QUIET_WINDOWS));
        expect((await directory.getUser(id)).quietHours.windows).toHaveLength(MAX_QUIET_WINDOWS);
      });

      it('bad windows are INVALID_ARGUMENT naming the field with its index, and nothing is stored', async () => {
        const { directory } = make();
        const id = newUserId();
        const bad = async (window: Record<string, unknown>, field: string) =>
          invalid(
            () =>
              directory.upsertUser(
                userInput(id, {
                  quietHours: { windows: [night, lunch, window as never], holdEmail: false },
                }),
              ),
            field,
          );
        await bad({ days: [1], start: '24:00', end: '07:00' }, 'quiet_hours.windows[2].start');
        await bad({ days: [1], start: '9:00', end: '07:00' }, 'quiet_hours.windows[2].start');
        await bad({ days: [1], start: '22:60', end: '07:00' }, 'quiet_hours.windows[2].start');
        await bad({ days: [1], start: '２２:00', end: '07:00' }, 'quiet_hours.windows[2].start');
        await bad({ days: [1], start: '22:00', end: '' }, 'quiet_hours.windows[2].end');
        await bad({ days: [1], start: '22:00', end: '22:00' }, 'quiet_hours.windows[2].end');
        await bad({ days: [0], start: '22:00', end: '07:00' }, 'quiet_hours.windows[2].days[0]');
        await bad({ days: [1, 8], start: '22:00', end: '07:00' }, 'quiet_hours.windows[2].days[1]');
        await bad({ days: [1.5], start: '22:00', end: '07:00' }, 'quiet_hours.windows[2].days[0]');
        await bad({ days: [3, 1, 3], start: '22:00', end: '07:00' }, 'quiet_hours.windows[2].days[2]');
        await expect(directory.getUser(id)).rejects.toBeInstanceOf(NotFoundError);
      });

      it('windows that leave no minute of the week free are refused (a quiet period is never endless)', async () => {
        const { directory } = make();
        const id = newUserId();
        const err = await invalid(
          () =>
            directory.upsertUser(
              userInput(id, {
                quietHours: {
                  windows: [
                    { days: [], start: '08:00', end: '20:00' },
                    { days: [], start: '20:00', end: '08:00' },
                  ],
                  holdEmail: false,
                },
              }),
            ),
          'quiet_hours.windows',
        );
        expect(err.message).toMatch(/whole week/);
        // One free minute a week is enough.
        await directory.upsertUser(
          userInput(id, {
            quietHours: {
              windows: [
                { days: [], start: '08:00', end: '20:00' },
                { days: [1, 2, 3, 4, 5, 6], start: '20:00', end: '08:00' },
                { days: [7], start: '20:00', end: '07:59' },
              ],
              holdEmail: false,
            },
          }),
        );
        expect((await directory.getUser(id)).quietHours.windows).toHaveLength(3);
      });

      it('DeleteUser erases the quiet hours: the user upserted again has none', async () => {
        const { directory } = make();
        const id = newUserId();
        await directory.upsertUser(userInput(id, { quietHours: { windows: [night], holdEmail: true } }));
        await directory.deleteUser(id);
        await expect(directory.getUser(id)).rejects.toBeInstanceOf(NotFoundError);
        expect((await directory.upsertUser(userInput(id))).user.quietHours).toEqual({
          windows: [],
          holdEmail: false,
        });
      });
    });

    describe('devices', () => {
      it('when a device is registered, GetUser shows it; registering it again keeps its time and takes the new backend', async () => {
        const { directory, clock } = make();
        const id = newUserId();
        await directory.upsertUser(userInput(id));
        const token = `tok-${newUserId()}`;
        const first = await directory.registerDevice(id, { token, platform: 'apns' });
        expect(first).toMatchObject({ token, platform: 'apns' });
        expect(first.backend).toBeUndefined();
        clock.step();
        const again = await directory.registerDevice(id, { token, platform: 'apns', backend: 'apns-main' });
        expect(again.registeredAt.getTime()).toBe(first.registeredAt.getTime());
        const user = await directory.getUser(id);
        expect(user.devices).toEqual([
          { token, platform: 'apns', backend: 'apns-main', registeredAt: first.registeredAt },
        ]);
      });

      it('when a token is registered to another user, it leaves the first', async () => {
        const { directory } = make();
        const [a, b] = [newUserId('a'), newUserId('b')];
        await directory.upsertUser(userInput(a));
        await directory.upsertUser(userInput(b));
        const token = `tok-${newUserId()}`;
        await directory.registerDevice(a, { token, platform: 'fcm' });
        await directory.registerDevice(b, { token, platform: 'fcm' });
        expect((await directory.getUser(a)).devices).toEqual([]);
        expect((await directory.getUser(b)).devices.map((d) => d.token)).toEqual([token]);
      });

      it('a user keeps at most max_devices: one more removes the oldest registration', async () => {
        const { directory, clock } = make({ max_devices: 3 });
        const id = newUserId();
        await directory.upsertUser(userInput(id));
        const tokens = [1, 2, 3, 4].map((n) => `tok-${n}-${newUserId()}`);
        for (const token of tokens) {
          await directory.registerDevice(id, { token, platform: 'fcm' });
          clock.step();
        }
        expect((await directory.getUser(id)).devices.map((d) => d.token)).toEqual(tokens.slice(1));
      });

      it('bad platform, backend, token or user: INVALID_ARGUMENT naming the field, NOT_FOUND for an unknown user', async () => {
        const { directory } = make();
        const id = newUserId();
        await directory.upsertUser(userInput(id));
        await invalid(() => directory.registerDevice(id, { token: 't', platform: '' as 'fcm' }), 'platform');
        const e = await invalid(
          () => directory.registerDevice(id, { token: 't', platform: 'fcm', backend: 'nope' }),
          'backend',
        );
        expect(e.message).toContain('apns-main, fcm-main');
        await invalid(() => directory.registerDevice(id, { token: 'a b', platform: 'fcm' }), 'token');
        await invalid(() => directory.registerDevice(id, { token: '', platform: 'fcm' }), 'token');
        await expect(
          directory.registerDevice(newUserId(), { token: 't', platform: 'fcm' }),
        ).rejects.toBeInstanceOf(NotFoundError);
      });

      it("UnregisterDevice removes the token; another user's or an unknown token is NOT_FOUND", async () => {
        const { directory } = make();
        const [a, b] = [newUserId('a'), newUserId('b')];
        await directory.upsertUser(userInput(a));
        await directory.upsertUser(userInput(b));
        const token = `tok-${newUserId()}`;
        await directory.registerDevice(a, { token, platform: 'apns' });
        await expect(directory.unregisterDevice(b, token)).rejects.toBeInstanceOf(NotFoundError);
        await directory.unregisterDevice(a, token);
        expect((await directory.getUser(a)).devices).toEqual([]);
        await expect(directory.unregisterDevice(a, token)).rejects.toBeInstanceOf(NotFoundError);
      });

      it('forgetDeviceToken removes the token from whoever holds it, once', async () => {
        const { directory } = make();
        const id = newUserId();
        await directory.upsertUser(userInput(id));
        const token = `tok-${newUserId()}`;
        await directory.registerDevice(id, { token, platform: 'apns' });
        expect(await directory.forgetDeviceToken(token)).toBe(true);
        expect((await directory.getUser(id)).devices).toEqual([]);
        expect(await directory.forgetDeviceToken(token)).toBe(false);
      });
    });

    describe('topics', () => {
      it('SubscribeTopic counts the new members; ListTopicSubscribers pages them in code point order by token', async () => {
        const { directory } = make({ default_page_size: 2, max_page_size: 3 });
        const topic = `t.${newUserId()}`;
        const base = newUserId();
        // Code point order puts U+FF21 (BMP, above the surrogates) before U+1F600 (an emoji).
        const ids = [`${base}-b`, `${base}-a`, `${base}-\uff21`, `${base}-😀`, `${base}-中`];
        for (const id of ids) await directory.upsertUser(userInput(id));
        expect(await directory.subscribeTopic(topic, ids.slice(0, 3))).toBe(3);
        expect(await directory.subscribeTopic(topic, ids)).toBe(2);
        const seen: string[] = [];
        let token: string | undefined;
        const sizes: number[] = [];
        do {
          const page = await directory.listTopicSubscribers(topic, 0, token);
          sizes.push(page.userIds.length);
          seen.push(...page.userIds);
          token = page.nextPageToken;
        } while (token);
        expect(sizes).toEqual([2, 2, 1]);
        expect(seen).toEqual([`${base}-a`, `${base}-b`, `${base}-中`, `${base}-\uff21`, `${base}-😀`]);
        // Above the maximum is capped; a token of another topic is refused.
        const capped = await directory.listTopicSubscribers(topic, 50);
        expect(capped.userIds).toHaveLength(3);
        await invalid(
          () => directory.listTopicSubscribers(`${topic}x`, 0, capped.nextPageToken),
          'page_token',
        );
        await invalid(() => directory.listTopicSubscribers(topic, -1), 'page_size');
      });

      it('when one user is unknown, SubscribeTopic is NOT_FOUND naming it and adds nobody', async () => {
        const { directory } = make();
        const topic = `t.${newUserId()}`;
        const known = newUserId();
        const unknown = newUserId('ghost');
        await directory.upsertUser(userInput(known));
        const err = await directory.subscribeTopic(topic, [known, unknown]).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(NotFoundError);
        expect((err as Error).message).toContain(unknown);
        expect((await directory.listTopicSubscribers(topic, 0)).userIds).toEqual([]);
      });

      it('a call names at most max_topic_batch users (duplicates counted once); topic names follow the rule', async () => {
        const { directory } = make({}, 2);
        const topic = `t.${newUserId()}`;
        const [a, b] = [newUserId('a'), newUserId('b')];
        await directory.upsertUser(userInput(a));
        await directory.upsertUser(userInput(b));
        await invalid(() => directory.subscribeTopic(topic, [a, b, a]), 'user_ids');
        expect(await directory.subscribeTopic(topic, [a, b])).toBe(2);
        await invalid(() => directory.subscribeTopic(topic, []), 'user_ids');
        await invalid(() => directory.subscribeTopic('bad topic', [a]), 'topic');
        await invalid(() => directory.subscribeTopic('x'.repeat(129), [a]), 'topic');
        await invalid(() => directory.subscribeTopic(topic, [a, '']), 'user_ids[1]');
      });

      it('UnsubscribeTopic counts the members removed and ignores the others', async () => {
        const { directory } = make();
        const topic = `t.${newUserId()}`;
        const [a, b] = [newUserId('a'), newUserId('b')];
        await directory.upsertUser(userInput(a));
        await directory.upsertUser(userInput(b));
        await directory.subscribeTopic(topic, [a]);
        expect(await directory.unsubscribeTopic(topic, [a, b, newUserId('ghost')])).toBe(1);
        expect((await directory.listTopicSubscribers(topic, 0)).userIds).toEqual([]);
      });
    });

    describe('DeleteUser', () => {
      it('erases the user, its devices and memberships, then runs every eraser; the token is free again', async () => {
        const { directory } = make();
        const erased: string[] = [];
        directory.onUserDeleted(async (id) => void erased.push(`first:${id}`));
        directory.onUserDeleted(async (id) => void erased.push(`second:${id}`));
        const [id, other] = [newUserId(), newUserId('other')];
        const topic = `t.${newUserId()}`;
        await directory.upsertUser(userInput(id, { emails: ['gone@example.com'] }));
        await directory.upsertUser(userInput(other));
        const token = `tok-${newUserId()}`;
        await directory.registerDevice(id, { token, platform: 'apns' });
        await directory.subscribeTopic(topic, [id, other]);

        await directory.deleteUser(id);

        expect(erased).toEqual([`first:${id}`, `second:${id}`]);
        await expect(directory.getUser(id)).rejects.toBeInstanceOf(NotFoundError);
        expect((await directory.listTopicSubscribers(topic, 0)).userIds).toEqual([other]);
        expect(await directory.forgetDeviceToken(token)).toBe(false);
        await directory.registerDevice(other, { token, platform: 'apns' });
        // Upserted again, the user starts empty.
        await directory.upsertUser(userInput(id));
        expect((await directory.getUser(id)).devices).toEqual([]);
      });

      it('when an eraser fails, DeleteUser fails; a retry runs the erasers again and answers NOT_FOUND', async () => {
        const { directory } = make();
        let failing = true;
        const erased: string[] = [];
        directory.onUserDeleted(async (id) => {
          if (failing) throw new Error('inbox down');
          erased.push(id);
        });
        const id = newUserId();
        await directory.upsertUser(userInput(id));
        await expect(directory.deleteUser(id)).rejects.toThrow('inbox down');
        failing = false;
        await expect(directory.deleteUser(id)).rejects.toBeInstanceOf(NotFoundError);
        expect(erased).toEqual([id]);
      });

      it('a contact-point eraser runs with the record before it is deleted and once more after the others', async () => {
        const { directory } = make();
        const calls: string[] = [];
        directory.onUserDeleted(async (id) => {
          // The users area's rows are gone by the time the id erasers run.
          calls.push(`id:${id}:${(await directory.findUser(id)) === undefined ? 'gone' : 'present'}`);
        });
        directory.onContactPointsDeleted(async (user) => {
          const present = (await directory.findUser(user.userId)) !== undefined;
          calls.push(`phones:${user.phones.join(',')}:${present ? 'present' : 'gone'}`);
        });
        const id = newUserId();
        await directory.upsertUser(userInput(id, { phones: ['+15551230001', '+15551230002'] }));
        await directory.deleteUser(id);
        expect(calls).toEqual([
          'phones:+15551230001,+15551230002:present',
          `id:${id}:gone`,
          'phones:+15551230001,+15551230002:gone',
        ]);
      });

      it('when a contact-point eraser fails, the user stays; the retry erases by the same numbers', async () => {
        const { directory } = make();
        let failing = true;
        const erasedNumbers: string[][] = [];
        const erasedIds: string[] = [];
        directory.onUserDeleted(async (id) => void erasedIds.push(id));
        directory.onContactPointsDeleted(async (user) => {
          if (failing) throw new Error('inbound log down');
          erasedNumbers.push(user.phones);
        });
        const id = newUserId();
        await directory.upsertUser(userInput(id, { phones: ['+15551230003'] }));
        await expect(directory.deleteUser(id)).rejects.toThrow('inbound log down');
        // Nothing was erased and the user still names the number, for the retry to find.
        expect(erasedIds).toEqual([]);
        expect((await directory.getUser(id)).phones).toEqual(['+15551230003']);
        failing = false;
        await directory.deleteUser(id);
        expect(erasedNumbers).toEqual([['+15551230003'], ['+15551230003']]);
        expect(erasedIds).toEqual([id]);
        await expect(directory.getUser(id)).rejects.toBeInstanceOf(NotFoundError);
      });
    });
  });
}
