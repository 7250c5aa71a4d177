/**
 * UserStore: where the user directory keeps its rows (InMemoryUserStore, DatabaseUserStore). Inputs
 * are validated and normalised by UserDirectory (user-directory.ts) before they reach a store.
 */
import type { Device, User, UserInput } from './types';

/** A user's row without devices (the store adds them when it reads a user). */
export type UserRecord = Omit<User, 'devices'>;

/** The user directory's storage. */
export interface UserStore {
  readonly backend: 'database' | 'memory';
  /** Creates or replaces the user's fields (created_at kept); `now` stamps it. */
  upsert(input: UserInput, now: Date): Promise<{ user: User; created: boolean }>;
  /** The user with its devices (oldest registration first), or undefined. */
  find(userId: string): Promise<User | undefined>;
  /** `find` of several users at once (a topic fan-out's group): the ones that exist, by user id. */
  findMany(userIds: readonly string[]): Promise<Map<string, User>>;
  /** Deletes the user, its devices and topic memberships; false when there was no such user. */
  delete(userId: string): Promise<boolean>;
  /**
   * Gives the token to the user (taking it from whichever user held it), keeping at most
   * `maxDevices` devices (the oldest registrations go). Registering a token the user holds again
   * keeps its registration time. Undefined when the user does not exist.
   */
  registerDevice(
    userId: string,
    device: Omit<Device, 'registeredAt'>,
    now: Date,
    maxDevices: number,
  ): Promise<Device | undefined>;
  /** Removes the token from that user; false when the user has no such token. */
  unregisterDevice(userId: string, token: string): Promise<boolean>;
  /** Removes the token from whichever user holds it; false when none does. */
  forgetToken(token: string): Promise<boolean>;
  /**
   * Adds the users to the topic, all or nothing: `{ missing }` names the first user id (in the order
   * given) that does not exist, and nothing is added. Ids are distinct.
   */
  subscribe(
    topic: string,
    userIds: readonly string[],
    now: Date,
  ): Promise<{ added: number } | { missing: string }>;
  /** Removes the users from the topic; how many were members. Ids are distinct. */
  unsubscribe(topic: string, userIds: readonly string[]): Promise<number>;
  /** At most `limit` member ids of the topic after `after`, in code point order. */
  listTopic(topic: string, limit: number, after?: string): Promise<string[]>;
}

/** Orders strings by code point (what PostgreSQL's `COLLATE "C"` does with UTF-8 text). */
export function compareCodePoints(a: string, b: string): number {
  // UTF-8 byte order is code point order; UTF-16 unit order differs above U+D7FF.
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}
