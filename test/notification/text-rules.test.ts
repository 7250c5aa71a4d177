/**
 * The callers of the one text check (shared/text/check.ts) in the notification service: the user id
 * rule of the directory, the preferences and the inbox, and the inbox's free text, with the wording
 * they now share (a lone surrogate is broken text, not a control character).
 */
import { invalidArgument } from '../support/call-errors';
import { InMemoryInboxStore } from '../../services/notification/inbox/memory-store';
import { checkUserId } from '../../services/notification/users/validation';
import {
  checkUserId as checkPreferenceUserId,
  MAX_USER_ID_LENGTH as MAX_PREFERENCE_USER_ID,
} from '../../services/notification/users/preferences/preference-book';
import { MAX_USER_ID_LENGTH as MAX_INBOX_USER_ID } from '../../services/notification/inbox/inbox-service';
import { buildService } from './inbox/support';

const BROKEN = 'must not contain NUL characters or broken text (a lone surrogate)';

describe("the directory's user id rule", () => {
  test('takes 128 emoji and refuses 129 with the shared wording', () => {
    expect(checkUserId('😀'.repeat(128), 128)).toBe('😀'.repeat(128));
    expect(invalidArgument(() => checkUserId('😀'.repeat(129), 128)).message).toBe(
      'user_id is longer than 128 characters',
    );
  });

  test('a C1 control character is a control character; a lone surrogate is broken text', () => {
    expect(invalidArgument(() => checkUserId('a\u0085', 128)).message).toBe(
      'user_id contains control characters',
    );
    expect(invalidArgument(() => checkUserId('a\ud800', 128, 'user_ids[2]')).message).toBe(
      `user_ids[2] ${BROKEN}`,
    );
  });
});

describe("the preferences' user id rule", () => {
  test('takes CJK at the bound and refuses one more; refuses control characters as the directory does', () => {
    expect(() => checkPreferenceUserId('𠀀'.repeat(MAX_PREFERENCE_USER_ID))).not.toThrow();
    expect(
      invalidArgument(() => checkPreferenceUserId('𠀀'.repeat(MAX_PREFERENCE_USER_ID + 1))).message,
    ).toBe(`user_id is longer than ${MAX_PREFERENCE_USER_ID} characters`);
    expect(invalidArgument(() => checkPreferenceUserId('a\tb')).message).toBe(
      'user_id contains control characters',
    );
    expect(invalidArgument(() => checkPreferenceUserId('a\u0000b')).message).toBe(
      'user_id contains control characters',
    );
  });
});

describe('the inbox', () => {
  const { service, hub } = buildService(new InMemoryInboxStore(), { max_title_length: 4 });
  afterAll(() => hub.stop());

  test('takes a title of 4 emoji at a limit of 4 and refuses 5', async () => {
    const sent = await service.send({ userId: 'u', title: '😀😀😀😀', body: '' });
    expect(sent.title).toBe('😀😀😀😀');
    expect(
      (await invalidArgument(() => service.send({ userId: 'u', title: '😀'.repeat(5), body: '' }))).message,
    ).toBe('title is longer than 4 characters');
  });

  test('keeps line breaks in a body, refuses a lone surrogate and a blank title as required', async () => {
    expect((await service.send({ userId: 'u', title: 'שלום', body: 'a\nb' })).body).toBe('a\nb');
    expect(
      (await invalidArgument(() => service.send({ userId: 'u', title: 't', body: 'x\udc00' }))).message,
    ).toBe(`body ${BROKEN}`);
    expect((await invalidArgument(() => service.send({ userId: 'u', title: '  ', body: '' }))).message).toBe(
      'title is required',
    );
  });

  test('a user id of 256 emoji is taken, 257 refused, a control character refused', async () => {
    await expect(service.countUnread('😀'.repeat(MAX_INBOX_USER_ID))).resolves.toBe(0);
    expect(
      (await invalidArgument(() => service.countUnread('😀'.repeat(MAX_INBOX_USER_ID + 1)))).message,
    ).toBe(`user_id is longer than ${MAX_INBOX_USER_ID} characters`);
    expect((await invalidArgument(() => service.countUnread('a\u0007'))).message).toBe(
      'user_id contains control characters',
    );
  });
});
