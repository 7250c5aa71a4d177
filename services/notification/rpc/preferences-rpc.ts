/**
 * GetPreferences and UpdatePreferences of UserService: wire messages to the PreferenceBook and back.
 * The users area's UserRpc spreads these handlers into its ServiceImpl; the rules (required
 * categories, unknown categories and channels, bounds) live in the domain (../users/preferences).
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { ServiceImpl } from '@connectrpc/connect';
import type {
  GetPreferencesRequest,
  GetPreferencesResponseSchema,
  Preference as WirePreference,
  UpdatePreferencesRequest,
  UpdatePreferencesResponseSchema,
  UserService,
} from '../../../shared/gen/svc/notification/v1/users_pb';
import type { NotifyChannel } from '../notify/config';
import type { Preference, PreferenceBook } from '../users/preferences';

/** The two preference methods of UserService (a part of its ServiceImpl). */
export interface PreferenceRpcHandlers {
  getPreferences(req: GetPreferencesRequest): Promise<MessageInitShape<typeof GetPreferencesResponseSchema>>;
  updatePreferences(
    req: UpdatePreferencesRequest,
  ): Promise<MessageInitShape<typeof UpdatePreferencesResponseSchema>>;
}

/** A domain preference as the wire message. */
export function toWirePreference(p: Preference): WirePreference {
  return {
    $typeName: 'svc.notification.v1.Preference',
    category: p.category,
    channel: p.channel,
    enabled: p.enabled,
    required: p.required,
    chosen: p.chosen,
  };
}

/** GetPreferences / UpdatePreferences over `book`, to spread into UserService's implementation. */
export function preferenceRpcHandlers(book: PreferenceBook): PreferenceRpcHandlers {
  const handlers = {
    async getPreferences(
      req: GetPreferencesRequest,
    ): Promise<MessageInitShape<typeof GetPreferencesResponseSchema>> {
      return { preferences: (await book.get(req.userId)).map(toWirePreference) };
    },
    async updatePreferences(
      req: UpdatePreferencesRequest,
    ): Promise<MessageInitShape<typeof UpdatePreferencesResponseSchema>> {
      // The channel is any string on the wire; the book refuses one that is not a NotifyChannel.
      const choices = req.preferences.map((p) => ({
        category: p.category,
        channel: p.channel as NotifyChannel,
        enabled: p.enabled,
      }));
      return { preferences: (await book.update(req.userId, choices)).map(toWirePreference) };
    },
  } satisfies Pick<ServiceImpl<typeof UserService>, keyof PreferenceRpcHandlers>;
  return handlers;
}
