/**
 * UserDirectory over a UserStore: the users area's one home of its rules (validation, bounds, the
 * erasers DeleteUser runs). Transports call it; `Notify` reads it.
 */
import { InvalidArgumentError, NotFoundError } from '../../../shared/errors';
import type { Logger } from '../../../shared/logging/logger';
import { silentLogger } from '../../../shared/logging/logger';
import { type Clock, dateReader } from '../../../shared/runtime/clock';
import { decodeTextKeyToken, encodeTextKeyToken } from '../../../shared/storage/keyset-token';
import { pageSize } from '../../../shared/storage/page-size';
import type { UsersConfig } from './config';
import type { UserStore } from './store';
import type { Device, TopicPage, User, UserDirectory, UserInput } from './types';
import {
  checkPlatform,
  checkToken,
  checkTopic,
  checkUserId,
  checkUserIds,
  normaliseUserInput,
} from './validation';

/** What UserDirectoryService is built from. */
export interface UserDirectoryOptions {
  store: UserStore;
  config: UsersConfig;
  /** `notify.max_topic_batch`: the most user ids one topic call may name. */
  maxTopicBatch: number;
  /** The configured push backends; a device's `backend` must be one of them. */
  pushBackends: readonly string[];
  clock?: Clock;
  logger?: Logger;
}

/** The user directory (the UserDirectory port of types.ts). */
export class UserDirectoryService implements UserDirectory {
  private readonly store: UserStore;
  private readonly config: UsersConfig;
  private readonly now: () => Date;
  private readonly erasers: ((userId: string) => Promise<void>)[] = [];
  private readonly contactErasers: ((user: User) => Promise<void>)[] = [];
  private readonly log: Logger;

  constructor(private readonly options: UserDirectoryOptions) {
    this.store = options.store;
    this.config = options.config;
    this.now = dateReader(options.clock);
    this.log = (options.logger ?? silentLogger()).child({ component: 'users' });
  }

  private userId(userId: string): string {
    return checkUserId(userId, this.config.max_user_id_length);
  }

  async upsertUser(input: UserInput): Promise<{ user: User; created: boolean }> {
    return this.store.upsert(normaliseUserInput(input, this.config), this.now());
  }

  async getUser(userId: string): Promise<User> {
    const user = await this.store.find(this.userId(userId));
    if (!user) throw new NotFoundError(`user ${JSON.stringify(userId)} not found`);
    return user;
  }

  async findUser(userId: string): Promise<User | undefined> {
    return this.store.find(this.userId(userId));
  }

  async findUsers(userIds: readonly string[]): Promise<Map<string, User>> {
    return this.store.findMany(userIds.map((id) => this.userId(id)));
  }

  /**
   * Erases, in this order:
   * 1. data other areas keep by contact point (inbound SMS by number), while the user's record still
   *    names the numbers: when that fails, the user is still here, so a retried DeleteUser finds the
   *    numbers again (erasing after the record was gone would leave them for good);
   * 2. the users area's rows (so a concurrent `Notify` finds no user and adds nothing the erasers
   *    below would miss);
   * 3. every eraser keyed by user id, and the contact-point erasers once more with the record as it
   *    was (a reply that arrived between 1 and 2).
   * An eraser that fails fails the call; the erasers are idempotent and run again for a user already
   * gone from this area, so retrying DeleteUser finishes the erasure (and answers NOT_FOUND: the user
   * is gone). Left: a reply that lands between 1 and 2 while the second pass then fails stays until
   * its retention.
   */
  async deleteUser(userId: string): Promise<void> {
    const id = this.userId(userId);
    const before = await this.store.find(id);
    if (before) for (const erase of this.contactErasers) await erase(before);
    const existed = await this.store.delete(id);
    for (const erase of this.erasers) await erase(id);
    if (before) for (const erase of this.contactErasers) await erase(before);
    if (!existed) throw new NotFoundError(`user ${JSON.stringify(userId)} not found`);
    this.log.info({ erasers: this.erasers.length + this.contactErasers.length }, 'user deleted');
  }

  onUserDeleted(eraser: (userId: string) => Promise<void>): void {
    this.erasers.push(eraser);
  }

  async eraseIfDeleted(userIds: readonly string[]): Promise<string[]> {
    const ids = [...new Set(userIds.map((id) => this.userId(id)))];
    const found = await this.store.findMany(ids);
    const gone = ids.filter((id) => !found.has(id));
    for (const id of gone) {
      for (const erase of this.erasers) await erase(id);
    }
    if (gone.length > 0)
      this.log.info({ users: gone.length }, 'erased what a fan-out wrote after DeleteUser');
    return gone;
  }

  onContactPointsDeleted(eraser: (user: User) => Promise<void>): void {
    this.contactErasers.push(eraser);
  }

  async registerDevice(userId: string, device: Omit<Device, 'registeredAt'>): Promise<Device> {
    const id = this.userId(userId);
    const token = checkToken(device.token);
    const platform = checkPlatform(device.platform);
    let backend: string | undefined;
    if (device.backend !== undefined && device.backend !== '') {
      if (!this.options.pushBackends.includes(device.backend)) {
        const names = this.options.pushBackends;
        throw new InvalidArgumentError(
          names.length === 0
            ? 'backend: no push backend is configured'
            : `backend must be one of the configured push backends: ${names.join(', ')}`,
          'backend',
        );
      }
      backend = device.backend;
    }
    const stored = await this.store.registerDevice(
      id,
      backend === undefined ? { token, platform } : { token, platform, backend },
      this.now(),
      this.config.max_devices,
    );
    if (!stored) throw new NotFoundError(`user ${JSON.stringify(userId)} not found`);
    return stored;
  }

  async unregisterDevice(userId: string, token: string): Promise<void> {
    const id = this.userId(userId);
    if (!(await this.store.unregisterDevice(id, checkToken(token)))) {
      throw new NotFoundError(`user ${JSON.stringify(userId)} has no such device token`);
    }
  }

  async forgetDeviceToken(token: string): Promise<boolean> {
    const removed = await this.store.forgetToken(checkToken(token));
    if (removed) this.log.info('a device token the provider reported unregistered was removed');
    return removed;
  }

  async subscribeTopic(topic: string, userIds: string[]): Promise<number> {
    const name = checkTopic(topic);
    const ids = checkUserIds(userIds, this.config.max_user_id_length, this.options.maxTopicBatch);
    const result = await this.store.subscribe(name, ids, this.now());
    if ('missing' in result) throw new NotFoundError(`user ${JSON.stringify(result.missing)} not found`);
    return result.added;
  }

  async unsubscribeTopic(topic: string, userIds: string[]): Promise<number> {
    const name = checkTopic(topic);
    const ids = checkUserIds(userIds, this.config.max_user_id_length, this.options.maxTopicBatch);
    return this.store.unsubscribe(name, ids);
  }

  async listTopicSubscribers(topic: string, size: number, pageToken?: string): Promise<TopicPage> {
    const name = checkTopic(topic);
    const limit = pageSize(size, { default: this.config.default_page_size, max: this.config.max_page_size });
    const binding = `topic:${name}`;
    const after = pageToken ? decodeTextKeyToken(binding, pageToken) : undefined;
    const ids = await this.store.listTopic(name, limit + 1, after);
    const page = ids.slice(0, limit);
    return ids.length > limit
      ? { userIds: page, nextPageToken: encodeTextKeyToken(binding, page[page.length - 1]!) }
      : { userIds: page };
  }
}
