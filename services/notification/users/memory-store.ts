/**
 * InMemoryUserStore: the `memory` store backend of the user directory, for tests and throwaway runs.
 * Bounded: at most `maxUsers` users and `maxMemberships` topic memberships (beyond:
 * RESOURCE_EXHAUSTED); devices are bounded per user by the directory.
 */
import { ResourceExhaustedError } from '../../../shared/errors';
import { type UserRecord, type UserStore, compareCodePoints } from './store';
import { type Device, NO_QUIET_HOURS, type User, type UserInput } from './types';

/** Default bounds of the memory store. */
export const DEFAULT_MEMORY_MAX_USERS = 100_000;
export const DEFAULT_MEMORY_MAX_MEMBERSHIPS = 1_000_000;

function copy<T>(value: T): T {
  return structuredClone(value);
}

/** The in-memory UserStore. */
export class InMemoryUserStore implements UserStore {
  readonly backend = 'memory' as const;
  private readonly users = new Map<string, UserRecord>();
  /** token -> the user holding it and the device. */
  private readonly devices = new Map<string, { userId: string; device: Device }>();
  /** topic -> member ids. */
  private readonly topics = new Map<string, Set<string>>();
  private memberships = 0;

  constructor(
    private readonly maxUsers = DEFAULT_MEMORY_MAX_USERS,
    private readonly maxMemberships = DEFAULT_MEMORY_MAX_MEMBERSHIPS,
  ) {}

  async upsert(input: UserInput, now: Date): Promise<{ user: User; created: boolean }> {
    const existing = this.users.get(input.userId);
    if (!existing && this.users.size >= this.maxUsers) {
      throw new ResourceExhaustedError(
        `the user directory holds its maximum of ${this.maxUsers} users (memory store)`,
      );
    }
    this.users.set(input.userId, {
      ...copy(input),
      quietHours: input.quietHours ?? NO_QUIET_HOURS,
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
    });
    return { user: (await this.find(input.userId))!, created: !existing };
  }

  async find(userId: string): Promise<User | undefined> {
    const record = this.users.get(userId);
    if (!record) return undefined;
    return { ...copy(record), devices: this.devicesOf(userId) };
  }

  async findMany(userIds: readonly string[]): Promise<Map<string, User>> {
    const found = new Map<string, User>();
    for (const id of userIds) {
      const user = await this.find(id);
      if (user) found.set(id, user);
    }
    return found;
  }

  private devicesOf(userId: string): Device[] {
    return [...this.devices.values()]
      .filter((d) => d.userId === userId)
      .map((d) => copy(d.device))
      .sort(
        (a, b) => a.registeredAt.getTime() - b.registeredAt.getTime() || compareCodePoints(a.token, b.token),
      );
  }

  async delete(userId: string): Promise<boolean> {
    if (!this.users.delete(userId)) return false;
    for (const [token, d] of this.devices) if (d.userId === userId) this.devices.delete(token);
    for (const [topic, members] of this.topics) {
      if (members.delete(userId)) this.memberships--;
      if (members.size === 0) this.topics.delete(topic);
    }
    return true;
  }

  async registerDevice(
    userId: string,
    device: Omit<Device, 'registeredAt'>,
    now: Date,
    maxDevices: number,
  ): Promise<Device | undefined> {
    if (!this.users.has(userId)) return undefined;
    const held = this.devices.get(device.token);
    const registeredAt = held?.userId === userId ? held.device.registeredAt : now;
    const stored: Device = { ...device, registeredAt };
    if (stored.backend === undefined) delete stored.backend;
    this.devices.set(device.token, { userId, device: stored });
    const mine = this.devicesOf(userId);
    // The oldest registrations go first; the one just registered is the newest.
    for (const old of mine.slice(0, Math.max(0, mine.length - maxDevices))) {
      if (old.token !== device.token) this.devices.delete(old.token);
    }
    return copy(stored);
  }

  async unregisterDevice(userId: string, token: string): Promise<boolean> {
    if (this.devices.get(token)?.userId !== userId) return false;
    return this.devices.delete(token);
  }

  async forgetToken(token: string): Promise<boolean> {
    return this.devices.delete(token);
  }

  async subscribe(
    topic: string,
    userIds: readonly string[],
    _now: Date,
  ): Promise<{ added: number } | { missing: string }> {
    const missing = userIds.find((id) => !this.users.has(id));
    if (missing !== undefined) return { missing };
    const members = this.topics.get(topic) ?? new Set<string>();
    const fresh = userIds.filter((id) => !members.has(id));
    if (this.memberships + fresh.length > this.maxMemberships) {
      throw new ResourceExhaustedError(
        `the user directory holds its maximum of ${this.maxMemberships} topic memberships (memory store)`,
      );
    }
    for (const id of fresh) members.add(id);
    this.memberships += fresh.length;
    if (members.size > 0) this.topics.set(topic, members);
    return { added: fresh.length };
  }

  async unsubscribe(topic: string, userIds: readonly string[]): Promise<number> {
    const members = this.topics.get(topic);
    if (!members) return 0;
    let removed = 0;
    for (const id of userIds) if (members.delete(id)) removed++;
    this.memberships -= removed;
    if (members.size === 0) this.topics.delete(topic);
    return removed;
  }

  async listTopic(topic: string, limit: number, after?: string): Promise<string[]> {
    const members = [...(this.topics.get(topic) ?? [])];
    return members
      .filter((id) => after === undefined || compareCodePoints(id, after) > 0)
      .sort(compareCodePoints)
      .slice(0, limit);
  }
}
