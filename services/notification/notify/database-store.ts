/**
 * The NotificationStore on PostgreSQL or PGlite (knex). A notification and its lines are rows of
 * `notifications` and `notification_channels`; a topic job is a row of `notification_topic_jobs`
 * with its cursor and lease. Leases and "now" come from the database's clock, so replicas whose
 * clocks differ agree on who holds a job.
 */
import type { Knex } from 'knex';
import { toNumber } from '../../../shared/storage/database';
import type { NewChild, NotificationPage, NotificationStore } from './store';
import type {
  ChannelLine,
  NewNotification,
  NotificationPageKey,
  NotificationRecord,
  NotificationStatus,
  NotifyPriority,
  SkipReason,
  TopicJob,
  TopicRequest,
} from './types';
import type { NotifyChannel } from './config';

interface NotificationRow {
  id: string;
  scope: string;
  user_id: string | null;
  topic: string | null;
  parent_id: string | null;
  category: string;
  priority: NotifyPriority;
  idempotency_key: string | null;
  request_hash: string;
  status: NotificationStatus;
  users_total: string | number;
  users_done: string | number;
  created_at: Date | string;
  updated_at: Date | string;
}

interface LineRow {
  notification_id: string;
  position: number;
  channel: NotifyChannel;
  contact: string;
  message_id: string | null;
  skip_reason: SkipReason | null;
  error: string | null;
  locale: string;
}

interface JobRow {
  notification_id: string;
  topic: string;
  request: TopicRequest | string | null;
  cursor: string | null;
  counted: boolean;
}

function rows<T>(result: unknown): T[] {
  return (result as { rows: T[] }).rows;
}

function toDate(v: Date | string): Date {
  return v instanceof Date ? v : new Date(v);
}

function toRecord(row: NotificationRow, lines: ChannelLine[] = []): NotificationRecord {
  return {
    id: row.id,
    scope: row.scope,
    userId: row.user_id,
    topic: row.topic,
    parentId: row.parent_id,
    category: row.category,
    priority: row.priority,
    idempotencyKey: row.idempotency_key,
    requestHash: row.request_hash,
    status: row.status,
    usersTotal: toNumber(row.users_total),
    usersDone: toNumber(row.users_done),
    channels: lines,
    createdAt: toDate(row.created_at),
    updatedAt: toDate(row.updated_at),
  };
}

function toLine(row: LineRow): ChannelLine {
  return {
    channel: row.channel,
    contact: row.contact,
    messageId: row.message_id,
    skipped: row.skip_reason,
    error: row.error,
    locale: row.locale,
  };
}

/** The row of a new notification, as jsonb_to_recordset reads it. */
function rowOf(n: NewNotification) {
  return {
    id: n.id,
    scope: n.scope,
    user_id: n.userId,
    topic: n.topic,
    parent_id: n.parentId,
    category: n.category,
    priority: n.priority,
    idempotency_key: n.idempotencyKey,
    request_hash: n.requestHash,
    status: n.status,
    created_at: n.createdAt.toISOString(),
  };
}

const INSERT_ROWS = `INSERT INTO notifications (id, scope, user_id, topic, parent_id, category, priority,
    idempotency_key, request_hash, status, created_at, updated_at)
  SELECT r.id, r.scope, r.user_id, r.topic, r.parent_id, r.category, r.priority, r.idempotency_key,
    r.request_hash, r.status, r.created_at, r.created_at
  FROM jsonb_to_recordset(?::jsonb) AS r(id uuid, scope text, user_id text, topic text, parent_id uuid,
    category text, priority text, idempotency_key text, request_hash text, status text,
    created_at timestamptz)
  ON CONFLICT DO NOTHING`;

/** The NotificationStore on PostgreSQL or PGlite. */
export class DatabaseNotificationStore implements NotificationStore {
  constructor(private readonly knex: Knex) {}

  async create(
    n: NewNotification,
    request?: TopicRequest,
  ): Promise<{ record: NotificationRecord; created: boolean }> {
    const isTopic = n.topic !== null && n.parentId === null;
    const created = await this.knex.transaction(async (trx) => {
      const inserted = rows<{ id: string }>(
        await trx.raw(`${INSERT_ROWS} RETURNING id`, [JSON.stringify([rowOf(n)])]),
      );
      if (inserted.length === 0) return false;
      if (isTopic) {
        await trx.raw(
          'INSERT INTO notification_topic_jobs (notification_id, topic, request) VALUES (?, ?, ?::jsonb)',
          [n.id, n.topic, JSON.stringify(request ?? { data: {}, overrides: [] })],
        );
      }
      return true;
    });
    if (created) return { record: (await this.get(n.id))!, created: true };
    // ON CONFLICT waited for the competing insert to commit, so the winner is visible now.
    const existing =
      n.idempotencyKey !== null
        ? await this.findByKey(n.scope, n.idempotencyKey)
        : await this.childOf(n.parentId!, n.userId!);
    if (!existing) throw new Error('notification insert conflicted but no existing row was found');
    return { record: existing, created: false };
  }

  private async childOf(parentId: string, userId: string): Promise<NotificationRecord | null> {
    const [row] = rows<NotificationRow>(
      await this.knex.raw('SELECT * FROM notifications WHERE parent_id = ? AND user_id = ?', [
        parentId,
        userId,
      ]),
    );
    return row ? this.withLines(row) : null;
  }

  private async withLines(row: NotificationRow): Promise<NotificationRecord> {
    const lines = rows<LineRow>(
      await this.knex.raw('SELECT * FROM notification_channels WHERE notification_id = ? ORDER BY position', [
        row.id,
      ]),
    );
    return toRecord(row, lines.map(toLine));
  }

  async findByKey(scope: string, idempotencyKey: string): Promise<NotificationRecord | null> {
    const [row] = rows<NotificationRow>(
      await this.knex.raw('SELECT * FROM notifications WHERE scope = ? AND idempotency_key = ?', [
        scope,
        idempotencyKey,
      ]),
    );
    return row ? this.withLines(row) : null;
  }

  async get(id: string): Promise<NotificationRecord | null> {
    const [row] = rows<NotificationRow>(
      await this.knex.raw('SELECT * FROM notifications WHERE id = ?', [id]),
    );
    return row ? this.withLines(row) : null;
  }

  async list(
    scope: string,
    userId: string,
    limit: number,
    after?: NotificationPageKey,
  ): Promise<NotificationPage> {
    const found = rows<NotificationRow>(
      await this.knex.raw(
        `SELECT * FROM notifications WHERE user_id = ? AND scope = ?
         ${after ? 'AND (created_at, id) < (?::timestamptz, ?::uuid)' : ''}
         ORDER BY created_at DESC, id DESC LIMIT ?`,
        after ? [userId, scope, after.createdAt, after.id, limit + 1] : [userId, scope, limit + 1],
      ),
    );
    const page = found.slice(0, limit);
    const lines = page.length
      ? rows<LineRow>(
          await this.knex.raw(
            `SELECT * FROM notification_channels WHERE notification_id IN (${page.map(() => '?').join(', ')})
             ORDER BY notification_id, position`,
            page.map((r) => r.id),
          ),
        )
      : [];
    const byId = new Map<string, ChannelLine[]>();
    for (const l of lines) {
      let list = byId.get(l.notification_id);
      if (!list) byId.set(l.notification_id, (list = []));
      list.push(toLine(l));
    }
    const records = page.map((r) => toRecord(r, byId.get(r.id) ?? []));
    const last = records[records.length - 1];
    return {
      records,
      nextKey: found.length > limit && last ? { createdAt: last.createdAt.toISOString(), id: last.id } : null,
    };
  }

  async saveFanOut(id: string, lines: readonly ChannelLine[]): Promise<void> {
    await this.knex.transaction(async (trx) => {
      await trx.raw('DELETE FROM notification_channels WHERE notification_id = ?', [id]);
      if (lines.length > 0) {
        await trx.raw(
          `INSERT INTO notification_channels (notification_id, position, channel, contact, message_id,
             skip_reason, error, locale)
           SELECT ?::uuid, l.position, l.channel, l.contact, l.message_id, l.skip_reason, l.error, l.locale
           FROM jsonb_to_recordset(?::jsonb) AS l(position int, channel text, contact text, message_id text,
             skip_reason text, error text, locale text)`,
          [
            id,
            JSON.stringify(
              lines.map((l, position) => ({
                position,
                channel: l.channel,
                contact: l.contact,
                message_id: l.messageId,
                skip_reason: l.skipped,
                error: l.error,
                locale: l.locale,
              })),
            ),
          ],
        );
      }
      await trx.raw(`UPDATE notifications SET status = 'fanned_out', updated_at = now() WHERE id = ?`, [id]);
    });
  }

  async purgeBefore(before: Date, limit: number): Promise<number> {
    // Lines, jobs and topic members go with their notification (ON DELETE CASCADE).
    return rows(
      await this.knex.raw(
        `DELETE FROM notifications WHERE id IN (
           SELECT id FROM notifications
           WHERE created_at < ? AND NOT (topic IS NOT NULL AND parent_id IS NULL AND status <> 'fanned_out')
           ORDER BY created_at LIMIT ?)
         RETURNING id`,
        [before.toISOString(), limit],
      ),
    ).length;
  }

  async eraseUser(userId: string): Promise<number> {
    // The lines go with their notification (ON DELETE CASCADE).
    return rows(await this.knex.raw('DELETE FROM notifications WHERE user_id = ? RETURNING id', [userId]))
      .length;
  }

  async claimTopicJob(owner: string, leaseMs: number): Promise<TopicJob | null> {
    return this.knex.transaction(async (trx) => {
      const [job] = rows<JobRow>(
        await trx.raw(
          `UPDATE notification_topic_jobs SET lease_owner = ?,
             lease_expires_at = now() + (? * interval '1 millisecond')
           WHERE notification_id = (
             SELECT notification_id FROM notification_topic_jobs
             WHERE finished_at IS NULL AND (lease_expires_at IS NULL OR lease_expires_at <= now())
             ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
           RETURNING notification_id, topic, request, cursor, counted`,
          [owner, leaseMs],
        ),
      );
      if (!job) return null;
      const [row] = rows<NotificationRow>(
        await trx.raw(
          `UPDATE notifications SET status = 'fanning_out', updated_at = now() WHERE id = ? RETURNING *`,
          [job.notification_id],
        ),
      );
      const request =
        typeof job.request === 'string' ? (JSON.parse(job.request) as TopicRequest) : job.request;
      return {
        notification: toRecord(row!),
        topic: job.topic,
        request: request ?? { data: {}, overrides: [] },
        cursor: job.cursor,
        counted: job.counted,
      };
    });
  }

  /** `WHERE` of a job `owner` holds the live lease of. */
  private static readonly HELD = `notification_id = ? AND lease_owner = ? AND lease_expires_at > now()
    AND finished_at IS NULL`;

  async renewTopicJob(id: string, owner: string, leaseMs: number): Promise<boolean> {
    return (
      rows(
        await this.knex.raw(
          `UPDATE notification_topic_jobs SET lease_expires_at = now() + (? * interval '1 millisecond')
           WHERE ${DatabaseNotificationStore.HELD} RETURNING notification_id`,
          [leaseMs, id, owner],
        ),
      ).length === 1
    );
  }

  async setTopicTotal(id: string, owner: string, total: number): Promise<boolean> {
    return this.knex.transaction(async (trx) => {
      const held = rows(
        await trx.raw(
          `UPDATE notification_topic_jobs SET counted = true WHERE ${DatabaseNotificationStore.HELD}
           RETURNING notification_id`,
          [id, owner],
        ),
      );
      if (held.length !== 1) return false;
      await trx.raw('UPDATE notifications SET users_total = ?, updated_at = now() WHERE id = ?', [total, id]);
      return true;
    });
  }

  async addTopicPage(
    id: string,
    owner: string,
    children: readonly NewChild[],
    done: number,
    cursor: string | null,
  ): Promise<boolean> {
    return this.knex.transaction(async (trx) => {
      // The lease row is locked first: a runner that lost its lease writes nothing.
      const held = rows(
        await trx.raw(
          `UPDATE notification_topic_jobs SET cursor = ? WHERE ${DatabaseNotificationStore.HELD}
           RETURNING notification_id`,
          [cursor, id, owner],
        ),
      );
      if (held.length !== 1) return false;
      if (children.length > 0) await trx.raw(INSERT_ROWS, [JSON.stringify(children.map(rowOf))]);
      await trx.raw('UPDATE notifications SET users_done = users_done + ?, updated_at = now() WHERE id = ?', [
        done,
        id,
      ]);
      return true;
    });
  }

  async pendingChildren(parentId: string, limit: number): Promise<NotificationRecord[]> {
    const found = rows<NotificationRow>(
      await this.knex.raw(
        `SELECT * FROM notifications WHERE parent_id = ? AND status = 'accepted'
         ORDER BY created_at, id LIMIT ?`,
        [parentId, limit],
      ),
    );
    return found.map((r) => toRecord(r));
  }

  async releaseTopicJob(id: string, owner: string): Promise<void> {
    await this.knex.raw(
      `UPDATE notification_topic_jobs SET lease_owner = NULL, lease_expires_at = NULL
       WHERE notification_id = ? AND lease_owner = ?`,
      [id, owner],
    );
  }

  async finishTopicJob(id: string, owner: string): Promise<boolean> {
    return this.knex.transaction(async (trx) => {
      const held = rows(
        await trx.raw(
          `UPDATE notification_topic_jobs SET finished_at = now(), request = NULL, lease_owner = NULL,
             lease_expires_at = NULL
           WHERE ${DatabaseNotificationStore.HELD} RETURNING notification_id`,
          [id, owner],
        ),
      );
      if (held.length !== 1) return false;
      await trx.raw(`UPDATE notifications SET status = 'fanned_out', updated_at = now() WHERE id = ?`, [id]);
      return true;
    });
  }
}
