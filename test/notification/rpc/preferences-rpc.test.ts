/**
 * preferenceRpcHandlers: GetPreferences / UpdatePreferences of UserService over the PreferenceBook,
 * with the generated request and response types, and the domain errors as the RPC ladder maps them.
 */
import { create, toBinary, fromBinary } from '@bufbuild/protobuf';
import { Code } from '@connectrpc/connect';
import {
  GetPreferencesRequestSchema,
  GetPreferencesResponseSchema,
  UpdatePreferencesRequestSchema,
  UpdatePreferencesResponseSchema,
} from '../../../shared/gen/svc/notification/v1/users_pb';
import { InMemoryPreferenceStore, Preferences } from '../../../services/notification/users/preferences';
import { preferenceRpcHandlers } from '../../../services/notification/rpc/preferences-rpc';
import { toConnectError } from '../../../shared/rpc/errors';
import { TEST_CATEGORIES, newUser } from '../users/preferences/support';

function handlers(known = true): ReturnType<typeof preferenceRpcHandlers> {
  const book = new Preferences({
    store: new InMemoryPreferenceStore(),
    categories: TEST_CATEGORIES,
    userExists: async () => known,
  });
  return preferenceRpcHandlers(book);
}

async function codeOf(p: Promise<unknown>): Promise<{ code: Code; message: string }> {
  try {
    await p;
  } catch (err) {
    const e = toConnectError(err);
    return { code: e.code, message: e.rawMessage };
  }
  throw new Error('expected a failure');
}

describe('preferenceRpcHandlers', () => {
  it('GetPreferences answers every category channel as wire Preferences that survive encoding', async () => {
    const h = handlers();
    const res = await h.getPreferences(create(GetPreferencesRequestSchema, { userId: newUser() }));
    const decoded = fromBinary(
      GetPreferencesResponseSchema,
      toBinary(GetPreferencesResponseSchema, create(GetPreferencesResponseSchema, res)),
    );
    expect(decoded.preferences).toHaveLength(8);
    expect(decoded.preferences[0]).toMatchObject({
      category: 'security',
      channel: 'inbox',
      enabled: true,
      required: true,
      chosen: false,
    });
    expect(decoded.preferences.find((p) => p.category === 'comments' && p.channel === 'push')).toMatchObject({
      enabled: false,
      required: false,
    });
  });

  it('UpdatePreferences records the entries (ignoring required and chosen) and answers the effective set', async () => {
    const h = handlers();
    const userId = newUser();
    const res = await h.updatePreferences(
      create(UpdatePreferencesRequestSchema, {
        userId,
        preferences: [{ category: 'news', channel: 'email', enabled: false, required: true, chosen: false }],
      }),
    );
    const wire = create(UpdatePreferencesResponseSchema, res);
    expect(wire.preferences.find((p) => p.category === 'news' && p.channel === 'email')).toMatchObject({
      enabled: false,
      chosen: true,
      required: false,
    });
    const again = await h.getPreferences(create(GetPreferencesRequestSchema, { userId }));
    expect(again.preferences).toEqual(res.preferences);
  });

  it('UpdatePreferences turning a required category off is INVALID_ARGUMENT naming it', async () => {
    const failure = await codeOf(
      handlers().updatePreferences(
        create(UpdatePreferencesRequestSchema, {
          userId: newUser(),
          preferences: [{ category: 'security', channel: 'email', enabled: false }],
        }),
      ),
    );
    expect(failure.code).toBe(Code.InvalidArgument);
    expect(failure.message).toMatch(/"security" is required/);
  });

  it('UpdatePreferences with an unknown category or channel is INVALID_ARGUMENT', async () => {
    const h = handlers();
    const userId = newUser();
    const unknownCategory = await codeOf(
      h.updatePreferences(
        create(UpdatePreferencesRequestSchema, {
          userId,
          preferences: [{ category: 'promos', channel: 'email', enabled: false }],
        }),
      ),
    );
    expect(unknownCategory).toMatchObject({ code: Code.InvalidArgument });
    expect(unknownCategory.message).toMatch(/security, comments, news/);
    const unknownChannel = await codeOf(
      h.updatePreferences(
        create(UpdatePreferencesRequestSchema, {
          userId,
          preferences: [{ category: 'news', channel: 'EMAIL', enabled: false }],
        }),
      ),
    );
    expect(unknownChannel.code).toBe(Code.InvalidArgument);
  });

  it('an unknown user is NOT_FOUND and an empty user_id INVALID_ARGUMENT', async () => {
    expect(
      (await codeOf(handlers(false).getPreferences(create(GetPreferencesRequestSchema, { userId: 'ghost' }))))
        .code,
    ).toBe(Code.NotFound);
    expect(
      (await codeOf(handlers().getPreferences(create(GetPreferencesRequestSchema, { userId: '' })))).code,
    ).toBe(Code.InvalidArgument);
  });
});
