/**
 * The console's users section (issue 29): look one user up (contact points and devices masked,
 * quiet hours, effective preferences, latest notifications, inbox unread count) and erase a user
 * (DeleteUser's erasure, every registered eraser) after the operator typed the user id again.
 *
 * Routes (under /admin/console/api/):
 * - `GET users/:id`: the user's card; 404 for an unknown user.
 * - `DELETE users/:id` and `POST users/:id/erase` with `{"confirm": "<the user id>"}`: erases;
 *   400 unless `confirm` repeats the id exactly; 404 for an unknown user.
 */
import { InvalidArgumentError } from '../../../../../shared/errors';
import type { Route } from '../../../../../shared/http/routes';
import { maskRecipient } from '../../../delivery/mask';
import type { NotificationView } from '../../../notify/notifier';
import type { User } from '../../../users/types';
import type { Preference } from '../../../users/preferences/types';
import { sendJson } from '../../http';
import { type ConsoleApi, type ConsoleContext, type ConsoleSection, jsonObject } from '../console-gateway';
import type { ConsoleSectionDeps } from '.';

/** Most notifications a user's card lists (the newest). */
export const USER_RECENT_NOTIFICATIONS = 20;

/** The users section. */
export function usersSection(deps: ConsoleSectionDeps): ConsoleSection {
  const log = deps.logger.child({ component: 'console-users' });

  async function card(ctx: ConsoleContext): Promise<void> {
    const user = await deps.users.getUser(ctx.params.id ?? '');
    const [preferences, notifications, unread] = await Promise.all([
      deps.preferences.get(user.userId),
      deps.notifier.recentOfUser(user.userId, USER_RECENT_NOTIFICATIONS),
      deps.inbox.countUnread(user.userId),
    ]);
    sendJson(ctx.res, 200, userJson(user, preferences, notifications, unread));
  }

  async function erase(ctx: ConsoleContext): Promise<void> {
    const id = ctx.params.id ?? '';
    const body = jsonObject(ctx.body);
    if (typeof body.confirm !== 'string' || body.confirm === '') {
      throw new InvalidArgumentError(
        'confirm is required: type the user id again to erase the user',
        'confirm',
      );
    }
    if (body.confirm !== id) {
      throw new InvalidArgumentError('confirm does not match the user id: nothing was erased', 'confirm');
    }
    await deps.users.deleteUser(id);
    log.info({ operator: ctx.operator.userId }, 'user erased from the console');
    sendJson(ctx.res, 200, { erased: true, user_id: id });
  }

  return {
    name: 'users',
    routes(api: ConsoleApi): Route[] {
      return [
        api.route(['GET'], 'users/:id', card),
        api.route(['DELETE'], 'users/:id', erase, { body: true }),
        api.route(['POST'], 'users/:id/erase', erase, { body: true }),
      ];
    },
  };
}

/** The user's card: contact points and device tokens masked; attributes named, not shown. */
export function userJson(
  user: User,
  preferences: readonly Preference[],
  notifications: readonly NotificationView[],
  unread: number,
): Record<string, unknown> {
  return {
    user_id: user.userId,
    locale: user.locale,
    time_zone: user.timeZone,
    emails: user.emails.map((e) => maskRecipient('email', e)),
    phones: user.phones.map((p) => maskRecipient('sms', p)),
    devices: user.devices.map((d) => ({
      platform: d.platform,
      token: maskRecipient('push', d.token),
      backend: d.backend ?? null,
      registered_at: d.registeredAt.toISOString(),
    })),
    quiet_hours: {
      windows: user.quietHours.windows.map((w) => ({ days: w.days, start: w.start, end: w.end })),
      hold_email: user.quietHours.holdEmail,
    },
    attribute_names: Object.keys(user.attributes).sort(),
    created_at: user.createdAt.toISOString(),
    updated_at: user.updatedAt.toISOString(),
    preferences: preferences.map((p) => ({
      category: p.category,
      channel: p.channel,
      enabled: p.enabled,
      required: p.required,
      chosen: p.chosen,
    })),
    notifications: notifications.map((n) => ({
      id: n.id,
      category: n.category,
      priority: n.priority,
      status: n.status,
      topic: n.topic,
      created_at: n.createdAt.toISOString(),
      channels: n.channels.map((c) => ({
        channel: c.channel,
        contact: c.contact,
        message_id: c.messageId,
        skipped: c.skipped,
        error: c.error,
      })),
    })),
    inbox_unread: unread,
  };
}
