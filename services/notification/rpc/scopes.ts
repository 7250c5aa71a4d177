/**
 * The notification service's API scopes and the one scope of every RPC method: the table
 * `server.api_tokens` entries are checked against (shared/rpc/access.ts). A method missing here fails
 * the type check and the server's start; the isolation suite calls every method with a token
 * lacking its scope. The README's production checklist lists the same table.
 */
import type { InboxService } from '../../../shared/gen/svc/notification/v1/inbox_pb';
import type { InboundSmsService } from '../../../shared/gen/svc/notification/v1/inbound_sms_pb';
import type { NotificationService } from '../../../shared/gen/svc/notification/v1/notification_pb';
import type { NotifyService } from '../../../shared/gen/svc/notification/v1/notify_pb';
import type { TemplateService } from '../../../shared/gen/svc/notification/v1/templates_pb';
import type { UserService } from '../../../shared/gen/svc/notification/v1/users_pb';
import type { MethodScopes } from '../../../shared/rpc/access';

/** Every scope a notification API token may hold (`*`: all of them). */
export const NOTIFICATION_SCOPES = [
  'inbox:read',
  'inbox:write',
  'delivery:send',
  'delivery:read',
  'suppressions:read',
  'suppressions:write',
  'users:read',
  'users:write',
  'templates:read',
  'templates:write',
  'notify:send',
  'notify:read',
  'sms:inbound',
] as const;

/** One scope of the notification service. */
export type NotificationScope = (typeof NOTIFICATION_SCOPES)[number];

type Table<
  S extends
    | typeof InboxService
    | typeof NotificationService
    | typeof UserService
    | typeof TemplateService
    | typeof NotifyService
    | typeof InboundSmsService,
> = MethodScopes<S> & {
  readonly [K in keyof S['method']]: NotificationScope;
};

/** InboxService: reading a user's inbox, and writing to it. */
export const INBOX_METHOD_SCOPES: Table<typeof InboxService> = {
  send: 'inbox:write',
  getInbox: 'inbox:read',
  markRead: 'inbox:write',
  markAllRead: 'inbox:write',
  delete: 'inbox:write',
  countUnread: 'inbox:read',
  clearAll: 'inbox:write',
  watchInbox: 'inbox:read',
};

/** NotificationService: sending, reading one's own deliveries, and the suppression list. */
export const NOTIFICATION_METHOD_SCOPES: Table<typeof NotificationService> = {
  sendSms: 'delivery:send',
  sendPush: 'delivery:send',
  sendPushBatch: 'delivery:send',
  sendEmail: 'delivery:send',
  getDelivery: 'delivery:read',
  listDeliveries: 'delivery:read',
  watchDeliveries: 'delivery:read',
  addSuppression: 'suppressions:write',
  removeSuppression: 'suppressions:write',
  listSuppressions: 'suppressions:read',
};

/** UserService: the directory of users, their devices, topics and preferences. */
export const USER_METHOD_SCOPES: Table<typeof UserService> = {
  upsertUser: 'users:write',
  getUser: 'users:read',
  deleteUser: 'users:write',
  registerDevice: 'users:write',
  unregisterDevice: 'users:write',
  subscribeTopic: 'users:write',
  unsubscribeTopic: 'users:write',
  listTopicSubscribers: 'users:read',
  getPreferences: 'users:read',
  updatePreferences: 'users:write',
};

/** TemplateService: the templates Notify renders (a preview reads them). */
export const TEMPLATE_METHOD_SCOPES: Table<typeof TemplateService> = {
  upsertTemplate: 'templates:write',
  getTemplate: 'templates:read',
  listTemplates: 'templates:read',
  deleteTemplate: 'templates:write',
  renderTemplate: 'templates:read',
};

/** NotifyService: telling a user, and reading what was told. */
export const NOTIFY_METHOD_SCOPES: Table<typeof NotifyService> = {
  notify: 'notify:send',
  getNotification: 'notify:read',
  listNotifications: 'notify:read',
  cancelNotification: 'notify:send',
};

/**
 * InboundSmsService: reading the replies people send to our SMS numbers (every sender's, so a scope of
 * its own, for consumers such as the monitor's `ACK <code>`).
 */
export const INBOUND_SMS_METHOD_SCOPES: Table<typeof InboundSmsService> = {
  watchInboundSms: 'sms:inbound',
};
