/**
 * The users area's records and its port: what the notify area reads and the RPC layer changes. Domain types only (no wire types): `rpc/user-rpc.ts` maps them.
 *
 * This file is the contract the areas built in parallel agreed on; the users area implements
 * `UserDirectory` (memory and database stores behind it).
 */
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
  /**
   * Erases everything the users area keeps about the user (contact points, devices,
   * topic memberships) and then every other area registered with `onUserDeleted` (preferences,
   * inbox, notifications, delivery records). NotFoundError when unknown.
   */
  deleteUser(userId: string): Promise<void>;
  /** Registers an eraser another area runs when a user is deleted (the composition root wires them). */
  onUserDeleted(eraser: (userId: string) => Promise<void>): void;

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
