/**
 * DatabaseUserStore: the user directory in PostgreSQL (pg) or the embedded PGlite, through knex.
 * Run the notification migrations first (20261127000000_users).
 */
import type { Knex } from 'knex';
import type { UserRecord, UserStore } from './store';
import { NO_QUIET_HOURS } from './types';
import type { Device, DevicePlatform, QuietHours, User, UserInput } from './types';
import { jsonColumn, rows } from '../../../shared/storage/database';

interface UserRow {
  user_id: string;
  emails: string[] | string;
  phones: string[] | string;
  locale: string;
  time_zone: string;
  attributes: Record<string, unknown> | string;
  quiet_hours: Partial<QuietHours> | string | null;
  created_at: Date | string;
  updated_at: Date | string;
}

interface DeviceRow {
  token: string;
  platform: DevicePlatform;
  backend: string | null;
  registered_at: Date | string;
}

/** The stored quiet hours (migration 20261128000000_user_quiet_hours); none when absent. */
function quietHoursOf(value: Partial<QuietHours> | string | null | undefined): QuietHours {
  const q = value === null || value === undefined ? undefined : jsonColumn<Partial<QuietHours>>(value);
  return { windows: q?.windows ?? [], holdEmail: q?.holdEmail === true };
}

function toRecord(r: UserRow): UserRecord {
  return {
    userId: r.user_id,
    emails: jsonColumn<string[]>(r.emails),
    phones: jsonColumn<string[]>(r.phones),
    locale: r.locale,
    timeZone: r.time_zone,
    quietHours: quietHoursOf(r.quiet_hours),
    attributes: jsonColumn<Record<string, unknown>>(r.attributes),
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
  };
}

function toDevice(r: DeviceRow): Device {
  const device: Device = { token: r.token, platform: r.platform, registeredAt: new Date(r.registered_at) };
  if (r.backend !== null) device.backend = r.backend;
  return device;
}

/** The knex-backed UserStore. */
export class DatabaseUserStore implements UserStore {
  readonly backend = 'database' as const;

  constructor(private readonly knex: Knex) {}

  async upsert(input: UserInput, now: Date): Promise<{ user: User; created: boolean }> {
    return this.knex.transaction(async (trx) => {
      const [row] = rows<UserRow & { created: boolean }>(
        await trx.raw(
          `INSERT INTO users (user_id, emails, phones, locale, time_zone, attributes, quiet_hours,
                              created_at, updated_at)
           VALUES (?, ?::jsonb, ?::jsonb, ?, ?, ?::jsonb, ?::jsonb, ?, ?)
           ON CONFLICT (user_id) DO UPDATE SET
             emails = excluded.emails, phones = excluded.phones, locale = excluded.locale,
             time_zone = excluded.time_zone, attributes = excluded.attributes,
             quiet_hours = excluded.quiet_hours, updated_at = excluded.updated_at
           RETURNING *, (xmax = 0) AS created`,
          [
            input.userId,
            JSON.stringify(input.emails),
            JSON.stringify(input.phones),
            input.locale,
            input.timeZone,
            JSON.stringify(input.attributes),
            JSON.stringify(input.quietHours ?? NO_QUIET_HOURS),
            now.toISOString(),
            now.toISOString(),
          ],
        ),
      );
      const devices = await this.devicesOf(trx, input.userId);
      return { user: { ...toRecord(row!), devices }, created: row!.created };
    });
  }

  private async devicesOf(db: Knex | Knex.Transaction, userId: string): Promise<Device[]> {
    return rows<DeviceRow>(
      await db.raw(
        `SELECT token, platform, backend, registered_at FROM user_devices
         WHERE user_id = ? ORDER BY registered_at, token COLLATE "C"`,
        [userId],
      ),
    ).map(toDevice);
  }

  async find(userId: string): Promise<User | undefined> {
    const [row] = rows<UserRow>(await this.knex.raw('SELECT * FROM users WHERE user_id = ?', [userId]));
    if (!row) return undefined;
    return { ...toRecord(row), devices: await this.devicesOf(this.knex, userId) };
  }

  async findMany(userIds: readonly string[]): Promise<Map<string, User>> {
    const found = new Map<string, User>();
    const ids = [...new Set(userIds)];
    if (ids.length === 0) return found;
    // Two statements for the whole group (users, then their devices), not two per user.
    const users = rows<UserRow>(
      await this.knex.raw('SELECT * FROM users WHERE user_id = ANY(?::text[])', [ids]),
    );
    if (users.length === 0) return found;
    const devices = rows<DeviceRow & { user_id: string }>(
      await this.knex.raw(
        `SELECT user_id, token, platform, backend, registered_at FROM user_devices
         WHERE user_id = ANY(?::text[]) ORDER BY user_id, registered_at, token COLLATE "C"`,
        [users.map((u) => u.user_id)],
      ),
    );
    const byUser = new Map<string, Device[]>();
    for (const d of devices) {
      let list = byUser.get(d.user_id);
      if (!list) byUser.set(d.user_id, (list = []));
      list.push(toDevice(d));
    }
    for (const row of users)
      found.set(row.user_id, { ...toRecord(row), devices: byUser.get(row.user_id) ?? [] });
    return found;
  }

  async delete(userId: string): Promise<boolean> {
    // Devices and memberships go with the row (ON DELETE CASCADE).
    const deleted = rows<{ user_id: string }>(
      await this.knex.raw('DELETE FROM users WHERE user_id = ? RETURNING user_id', [userId]),
    );
    return deleted.length > 0;
  }

  async registerDevice(
    userId: string,
    device: Omit<Device, 'registeredAt'>,
    now: Date,
    maxDevices: number,
  ): Promise<Device | undefined> {
    return this.knex.transaction(async (trx) => {
      // Holds the user against a concurrent DeleteUser until the device is in.
      const user = rows(await trx.raw('SELECT 1 FROM users WHERE user_id = ? FOR KEY SHARE', [userId]));
      if (user.length === 0) return undefined;
      const [row] = rows<DeviceRow>(
        await trx.raw(
          `INSERT INTO user_devices (token, user_id, platform, backend, registered_at)
           VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (token) DO UPDATE SET
             platform = excluded.platform, backend = excluded.backend,
             registered_at = CASE WHEN user_devices.user_id = excluded.user_id
                                  THEN user_devices.registered_at ELSE excluded.registered_at END,
             user_id = excluded.user_id
           RETURNING token, platform, backend, registered_at`,
          [device.token, userId, device.platform, device.backend ?? null, now.toISOString()],
        ),
      );
      // The per-user bound: the oldest registrations beyond it go (never the token just registered).
      await trx.raw(
        `DELETE FROM user_devices WHERE user_id = ? AND token <> ? AND token NOT IN (
           SELECT token FROM user_devices WHERE user_id = ?
           ORDER BY (token = ?) DESC, registered_at DESC, token COLLATE "C" DESC LIMIT ?)`,
        [userId, device.token, userId, device.token, maxDevices],
      );
      return toDevice(row!);
    });
  }

  async unregisterDevice(userId: string, token: string): Promise<boolean> {
    const deleted = rows(
      await this.knex.raw('DELETE FROM user_devices WHERE user_id = ? AND token = ? RETURNING token', [
        userId,
        token,
      ]),
    );
    return deleted.length > 0;
  }

  async forgetToken(token: string): Promise<boolean> {
    const deleted = rows(
      await this.knex.raw('DELETE FROM user_devices WHERE token = ? RETURNING token', [token]),
    );
    return deleted.length > 0;
  }

  async subscribe(
    topic: string,
    userIds: readonly string[],
    now: Date,
  ): Promise<{ added: number } | { missing: string }> {
    if (userIds.length === 0) return { added: 0 };
    return this.knex.transaction(async (trx) => {
      // Holds the users against a concurrent DeleteUser until the memberships are in.
      const found = new Set(
        rows<{ user_id: string }>(
          await trx.raw('SELECT user_id FROM users WHERE user_id = ANY(?::text[]) FOR KEY SHARE', [
            [...userIds],
          ]),
        ).map((r) => r.user_id),
      );
      const missing = userIds.find((id) => !found.has(id));
      if (missing !== undefined) return { missing };
      const added = rows(
        await trx.raw(
          `INSERT INTO topic_members (topic, user_id, created_at)
           SELECT ?, u, ? FROM unnest(?::text[]) AS u
           ON CONFLICT (topic, user_id) DO NOTHING
           RETURNING user_id`,
          [topic, now.toISOString(), [...userIds]],
        ),
      );
      return { added: added.length };
    });
  }

  async unsubscribe(topic: string, userIds: readonly string[]): Promise<number> {
    if (userIds.length === 0) return 0;
    const removed = rows(
      await this.knex.raw(
        'DELETE FROM topic_members WHERE topic = ? AND user_id = ANY(?::text[]) RETURNING user_id',
        [topic, [...userIds]],
      ),
    );
    return removed.length;
  }

  async listTopic(topic: string, limit: number, after?: string): Promise<string[]> {
    const found =
      after === undefined
        ? await this.knex.raw('SELECT user_id FROM topic_members WHERE topic = ? ORDER BY user_id LIMIT ?', [
            topic,
            limit,
          ])
        : await this.knex.raw(
            'SELECT user_id FROM topic_members WHERE topic = ? AND user_id > ? ORDER BY user_id LIMIT ?',
            [topic, after, limit],
          );
    return rows<{ user_id: string }>(found).map((r) => r.user_id);
  }
}
