/** Helpers shared by the preferences tests: a category set covering every rule, unique users. */
import { randomUUID } from 'node:crypto';
import { type NotifyConfig, NotifyConfigSchema } from '../../../../services/notification/notify/config';

/**
 * `security` is required (every channel always on); `comments` keeps push available but off; `news`
 * keeps SMS off; unlisted channels of a category are on by default.
 */
export const TEST_CATEGORIES: NotifyConfig['categories'] = NotifyConfigSchema.parse({
  categories: [
    { name: 'security', channels: ['inbox', 'email', 'sms'], required: true },
    { name: 'comments', channels: ['inbox', 'email', 'push'], defaults: { push: false } },
    { name: 'news', channels: ['email', 'sms'], defaults: { sms: false } },
  ],
}).categories;

/** A unique user id, so tests sharing a database never see each other's rows. */
export function newUser(prefix = 'user'): string {
  return `${prefix}-${randomUUID()}`;
}
