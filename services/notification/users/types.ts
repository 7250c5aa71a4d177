/**
 * The users area's records and its port: what the notify area reads and the RPC layer changes. Domain types only (no wire types): `rpc/user-rpc.ts` maps them.
 *
 * This file is the contract the areas built in parallel agreed on; the users area implements
 * `UserDirectory` (memory and database stores behind it).
 */
/** One recurring quiet window, in the user's local time. */
export interface QuietWindow {
  /** ISO days the window STARTS on (1 Monday ... 7 Sunday); empty: every day. */
  days: number[];
  /** "HH:MM" local. */
  start: string;
  /** "HH:MM" local; at or before `start`: the next day (an overnight window). */
  end: string;
}

/** A user's quiet hours. */
export interface QuietHours {
  /** At most MAX_QUIET_WINDOWS; empty: none. */
  windows: QuietWindow[];
  /** Email is held too (default false: SMS and push only; the inbox never). */
  holdEmail: boolean;
}

/** Most windows of one user. */
export const MAX_QUIET_WINDOWS = 14;

/** No quiet hours. */
export const NO_QUIET_HOURS: QuietHours = Object.freeze({ windows: [], holdEmail: false }) as QuietHours;

/**
 * `quietHoursEnd(quiet, timeZone, at)`: null when `at` is outside every window; otherwise the instant
 * the quiet period covering `at` ends (windows that touch or overlap are one period), in `timeZone`
 * (IANA, '' = UTC), correct across DST: a local end time that does not exist (spring-forward gap) is
 * the first instant after the gap; one that exists twice (autumn) is its first occurrence.
 */
export type QuietHoursEnd = (quiet: QuietHours, timeZone: string, at: Date) => Date | null;

/** A push platform. */
export type DevicePlatform = 'apns' | 'fcm';

/** One push device token of a user. */
export interface Device {
  token: string;
  platform: DevicePlatform;
  /** The push backend to send through; undefined: the primary. */
  backend?: string;
  registeredAt: Date;
}

/** One person the service notifies. */
export interface User {
  userId: string;
  /** Normalised addresses (trimmed, domain lower-cased), in the order given. */
  emails: string[];
  /** E.164 numbers. */
  phones: string[];
  /** Canonical BCP 47; '' means the default locale. */
  locale: string;
  /** IANA zone; '' means UTC. */
  timeZone: string;
  /** Free-form JSON object templates read as `user.attributes`. */
  attributes: Record<string, unknown>;
  devices: Device[];
  /** When NORMAL SMS and push (and email, if set) wait; NO_QUIET_HOURS when none. */
  quietHours: QuietHours;
  createdAt: Date;
  updatedAt: Date;
}

/** The fields UpsertUser sets (each replaces the stored one whole). */
export interface UserInput {
  userId: string;
  emails: string[];
  phones: string[];
  locale: string;
  timeZone: string;
  attributes: Record<string, unknown>;
  /** Replaces the stored quiet hours whole; absent: none. */
  quietHours?: QuietHours;
}

/** One page of a topic's members. */
export interface TopicPage {
  userIds: string[];
  /** Undefined on the last page. */
  nextPageToken?: string;
}

/**
 * The users area as the other areas see it. Every method throws the shared DomainErrors:
 * NotFoundError for an unknown user, InvalidArgumentError naming the field for bad input.
 */
export interface UserDirectory {
  upsertUser(input: UserInput): Promise<{ user: User; created: boolean }>;
  /** NotFoundError when unknown. */
  getUser(userId: string): Promise<User>;
  /** Undefined when unknown (for fan-out, where a vanished user is skipped, not an error). */
  findUser(userId: string): Promise<User | undefined>;
  /** `findUser` of several users in one read (a topic fan-out's group); unknown ones are absent. */
  findUsers(userIds: readonly string[]): Promise<Map<string, User>>;
  /**
   * Erases everything the users area keeps about the user (contact points, devices,
   * topic memberships) and then every other area registered with `onUserDeleted` (preferences,
   * inbox, notifications, delivery records). NotFoundError when unknown.
   */
  deleteUser(userId: string): Promise<void>;
  /**
   * Registers an eraser another area runs when a user is deleted, by user id (the composition root
   * wires them). It runs after the users area's rows are gone, and again on a retried DeleteUser.
   */
  onUserDeleted(eraser: (userId: string) => Promise<void>): void;
  /**
   * The last step of a write that read users before writing about them (a Notify fan-out: the user
   * read, then the inbox message, the deliveries and the notification's lines written): each of
   * `userIds` that no longer exists gets every `onUserDeleted` eraser run again, so what the write
   * added after a concurrent DeleteUser's erasers had run is erased too. Returns the ids that were
   * gone. Either the read here sees the user (then DeleteUser's row delete, and its erasers, come
   * after the write) or it does not (then these erasers come after the write): nothing is left.
   */
  eraseIfDeleted(userIds: readonly string[]): Promise<string[]>;
  /**
   * Registers an eraser of data another area keeps by contact point (inbound SMS by the user's
   * numbers): it runs with the user's record before the record is deleted (so a failure leaves the
   * user and its numbers for the retry) and once more after the other erasers.
   */
  onContactPointsDeleted(eraser: (user: User) => Promise<void>): void;

  registerDevice(userId: string, device: Omit<Device, 'registeredAt'>): Promise<Device>;
  unregisterDevice(userId: string, token: string): Promise<void>;
  /**
   * Removes a token from whichever user holds it, as the push channel reports it unregistered
   * (APNs 410, FCM UNREGISTERED). Returns whether a device was removed.
   */
  forgetDeviceToken(token: string): Promise<boolean>;

  subscribeTopic(topic: string, userIds: string[]): Promise<number>;
  unsubscribeTopic(topic: string, userIds: string[]): Promise<number>;
  /** One page of a topic's members in user id order, after `pageToken`. */
  listTopicSubscribers(topic: string, pageSize: number, pageToken?: string): Promise<TopicPage>;
}
