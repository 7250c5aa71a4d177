/**
 * The NotificationStore on PostgreSQL or PGlite (knex). A notification and its lines are rows of
 * `notifications` and `notification_channels`; a topic job is a row of `notification_topic_jobs`
 * with its cursor and lease. Leases and "now" come from the database's clock, so replicas whose
 * clocks differ agree on who holds a job.
 */
import type { Knex } from 'knex';
import { toDate, toNumber, rows } from '../../../shared/storage/database';
import type {
  FanOutResult,
  NewChild,
  NotificationFilter,
  NotificationPage,
  NotificationStore,
} from './store';
import type {
  ChannelLine,
  DueNotification,
  HoldReason,
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
  send_at: Date | string | null;
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
  held_until: Date | string | null;
  hold_reason: HoldReason | null;
  throttled_by: string | null;
  digest_id: string | null;
}

interface JobRow {
  notification_id: string;
  topic: string;
  request: TopicRequest | string | null;
  cursor: string | null;
  counted: boolean;
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
    sendAt: row.send_at === null || row.send_at === undefined ? null : toDate(row.send_at),
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
    heldUntil: row.held_until === null ? null : toDate(row.held_until),
    holdReason: row.hold_reason,
    throttledBy: row.throttled_by,
    digestId: row.digest_id,
  };
}

function parseRequest(value: TopicRequest | string | null): TopicRequest {
  const request = typeof value === 'string' ? (JSON.parse(value) as TopicRequest) : value;
  return request ?? { data: {}, overrides: [] };
}

/** A line as jsonb_to_recordset reads it (INSERT_LINES). */
function lineRow(id: string, position: number, l: ChannelLine) {
  return {
    notification_id: id,
    position,
    channel: l.channel,
    contact: l.contact,
    message_id: l.messageId,
    skip_reason: l.skipped,
    error: l.error,
    locale: l.locale,
    held_until: l.heldUntil ? l.heldUntil.toISOString() : null,
    hold_reason: l.holdReason ?? null,
    throttled_by: l.throttledBy ?? null,
    digest_id: l.digestId ?? null,
  };
}

/** Inserts the lines of one or more notifications (a jsonb array of `lineRow`s) in one statement. */
const INSERT_LINES = `INSERT INTO notification_channels (notification_id, position, channel, contact, message_id,
    skip_reason, error, locale, held_until, hold_reason, throttled_by, digest_id)
  SELECT l.notification_id, l.position, l.channel, l.contact, l.message_id, l.skip_reason, l.error,
    l.locale, l.held_until, l.hold_reason, l.throttled_by, l.digest_id
  FROM jsonb_to_recordset(?::jsonb) AS l(notification_id uuid, position int, channel text, contact text,
    message_id text, skip_reason text, error text, locale text, held_until timestamptz,
    hold_reason text, throttled_by text, digest_id text)`;

/** Replaces a notification's lines inside `trx`. */
async function writeLines(trx: Knex.Transaction, id: string, lines: readonly ChannelLine[]): Promise<void> {
  await trx.raw('DELETE FROM notification_channels WHERE notification_id = ?', [id]);
  if (lines.length === 0) return;
  await trx.raw(INSERT_LINES, [JSON.stringify(lines.map((l, position) => lineRow(id, position, l)))]);
}

/** The earliest held line's release (ISO), or null. */
function earliestHold(lines: readonly ChannelLine[]): string | null {
  let min: number | null = null;
  for (const l of lines) {
    if (l.heldUntil) min = min === null ? l.heldUntil.getTime() : Math.min(min, l.heldUntil.getTime());
  }
  return min === null ? null : new Date(min).toISOString();
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
    send_at: n.sendAt ? n.sendAt.toISOString() : null,
    created_at: n.createdAt.toISOString(),
  };
}

const INSERT_ROWS = `INSERT INTO notifications (id, scope, user_id, topic, parent_id, category, priority,
    idempotency_key, request_hash, status, send_at, created_at, updated_at)
  SELECT r.id, r.scope, r.user_id, r.topic, r.parent_id, r.category, r.priority, r.idempotency_key,
    r.request_hash, r.status, r.send_at, r.created_at, r.created_at
  FROM jsonb_to_recordset(?::jsonb) AS r(id uuid, scope text, user_id text, topic text, parent_id uuid,
    category text, priority text, idempotency_key text, request_hash text, status text,
    send_at timestamptz, created_at timestamptz)
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
          `INSERT INTO notification_topic_jobs (notification_id, topic, request, not_before)
           VALUES (?, ?, ?::jsonb, ?)`,
          [
            n.id,
            n.topic,
            JSON.stringify(request ?? { data: {}, overrides: [] }),
            n.sendAt ? n.sendAt.toISOString() : null,
          ],
        );
      } else if (n.status === 'scheduled' && n.sendAt) {
        await trx.raw('UPDATE notifications SET due_at = send_at, request = ?::jsonb WHERE id = ?', [
          JSON.stringify(request ?? { data: {}, overrides: [] }),
          n.id,
        ]);
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

  async listAll(
    filter: NotificationFilter,
    limit: number,
    after?: NotificationPageKey,
  ): Promise<NotificationPage> {
    const where: string[] = [];
    const bindings: Knex.RawBinding[] = [];
    for (const [column, value] of [
      ['user_id', filter.userId],
      ['category', filter.category],
      ['status', filter.status],
    ] as const) {
      if (value !== undefined) {
        where.push(`${column} = ?`);
        bindings.push(value);
      }
    }
    if (after) {
      where.push('(created_at, id) < (?::timestamptz, ?::uuid)');
      bindings.push(after.createdAt, after.id);
    }
    bindings.push(limit + 1);
    const found = rows<NotificationRow>(
      await this.knex.raw(
        `SELECT * FROM notifications ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
         ORDER BY created_at DESC, id DESC LIMIT ?`,
        bindings,
      ),
    );
    const page = found.slice(0, limit);
    const records = await Promise.all(page.map((row) => this.withLines(row)));
    const last = records[records.length - 1];
    return {
      records,
      nextKey: found.length > limit && last ? { createdAt: last.createdAt.toISOString(), id: last.id } : null,
    };
  }

  async findByMessageId(messageId: string): Promise<NotificationRecord | null> {
    // The partial index notification_channels_message_idx (migration 20261129000000).
    const [row] = rows<NotificationRow>(
      await this.knex.raw(
        `SELECT n.* FROM notifications n
         WHERE n.id = (SELECT notification_id FROM notification_channels
                       WHERE message_id = ? AND message_id IS NOT NULL LIMIT 1)`,
        [messageId],
      ),
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
        [userId, scope, ...(after ? [after.createdAt, after.id] : []), limit + 1],
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

  async saveFanOut(id: string, lines: readonly ChannelLine[], request?: TopicRequest): Promise<void> {
    // One notification is a group of one: the same lock order, statements and erased-meanwhile rule.
    await this.saveFanOuts([{ id, lines, request }]);
  }

  async saveFanOuts(entries: readonly FanOutResult[]): Promise<void> {
    if (entries.length === 0) return;
    const ids = [...new Set(entries.map((e) => e.id))].sort();
    const list = ids.map(() => '?').join(', ');
    await this.knex.transaction(async (trx) => {
      // The notification rows first, in id order, as cancel and finishDue take them: no deadlock.
      const locked = new Set(
        rows<{ id: string }>(
          await trx.raw(`SELECT id FROM notifications WHERE id IN (${list}) ORDER BY id FOR UPDATE`, ids),
        ).map((r) => r.id),
      );
      // A member erased meanwhile (DeleteUser) is gone: nothing of it is written, the others are.
      const kept = entries.filter((e) => locked.has(e.id));
      if (kept.length === 0) return;
      await trx.raw(`DELETE FROM notification_channels WHERE notification_id IN (${list})`, ids);
      const lines = kept.flatMap((e) => e.lines.map((l, position) => lineRow(e.id, position, l)));
      if (lines.length > 0) await trx.raw(INSERT_LINES, [JSON.stringify(lines)]);
      await trx.raw(
        `UPDATE notifications n SET status = 'fanned_out', updated_at = now(), due_at = u.due_at,
           request = u.request, lease_owner = NULL, lease_expires_at = NULL
         FROM jsonb_to_recordset(?::jsonb) AS u(id uuid, due_at timestamptz, request jsonb)
         WHERE n.id = u.id`,
        [
          JSON.stringify(
            kept.map((e) => {
              const dueAt = earliestHold(e.lines);
              return {
                id: e.id,
                due_at: dueAt,
                request: dueAt ? (e.request ?? { data: {}, overrides: [] }) : null,
              };
            }),
          ),
        ],
      );
    });
  }

  async claimDue(owner: string, leaseMs: number, limit: number): Promise<DueNotification[]> {
    // One statement: the row is locked and its state checked as it is taken, so a cancel committed
    // first is seen (status cancelled, due_at NULL: not taken), and a cancel after finds the lease.
    const claimed = rows<NotificationRow & { request: TopicRequest | string | null; was: string }>(
      await this.knex.raw(
        `WITH due AS (
           SELECT id, status AS was FROM notifications
           WHERE due_at IS NOT NULL AND due_at <= now()
             AND (lease_expires_at IS NULL OR lease_expires_at <= now())
           ORDER BY due_at LIMIT ? FOR UPDATE SKIP LOCKED)
         UPDATE notifications n SET lease_owner = ?,
           lease_expires_at = now() + (? * interval '1 millisecond'),
           status = CASE WHEN n.status = 'fanned_out' THEN n.status ELSE 'fanning_out' END,
           updated_at = now()
         FROM due WHERE n.id = due.id
         RETURNING n.*, due.was`,
        [limit, owner, leaseMs],
      ),
    );
    if (claimed.length === 0) return [];
    const lines = rows<LineRow>(
      await this.knex.raw(
        `SELECT * FROM notification_channels WHERE notification_id IN (${claimed.map(() => '?').join(', ')})
         ORDER BY notification_id, position`,
        claimed.map((r) => r.id),
      ),
    );
    const byId = new Map<string, ChannelLine[]>();
    for (const l of lines) {
      let list = byId.get(l.notification_id);
      if (!list) byId.set(l.notification_id, (list = []));
      list.push(toLine(l));
    }
    return claimed
      .map((row) => ({
        kind: row.was === 'fanned_out' ? ('release' as const) : ('send' as const),
        notification: toRecord(row, byId.get(row.id) ?? []),
        request: parseRequest(row.request),
      }))
      .sort((a, b) => (a.notification.id < b.notification.id ? -1 : 1));
  }

  async finishDue(id: string, owner: string, lines: readonly ChannelLine[]): Promise<boolean> {
    return this.knex.transaction(async (trx) => {
      const held = rows<{ request: TopicRequest | string | null }>(
        await trx.raw(
          `SELECT request FROM notifications
           WHERE id = ? AND lease_owner = ? AND lease_expires_at > now() FOR UPDATE`,
          [id, owner],
        ),
      );
      if (held.length !== 1) return false;
      await writeLines(trx, id, lines);
      const dueAt = earliestHold(lines);
      await trx.raw(
        `UPDATE notifications SET status = 'fanned_out', updated_at = now(), due_at = ?,
           request = CASE WHEN ?::timestamptz IS NULL THEN NULL ELSE request END,
           lease_owner = NULL, lease_expires_at = NULL
         WHERE id = ?`,
        [dueAt, dueAt, id],
      );
      return true;
    });
  }

  async releaseDue(id: string, owner: string): Promise<void> {
    await this.knex.raw(
      `UPDATE notifications SET lease_owner = NULL, lease_expires_at = NULL
       WHERE id = ? AND lease_owner = ?`,
      [id, owner],
    );
  }

  async cancel(
    id: string,
    digestIds: readonly string[],
  ): Promise<{ record: NotificationRecord; cancelled: number; going: boolean } | null> {
    const cancelled = await this.knex.transaction(async (trx) => {
      const [row] = rows<{ status: NotificationStatus; going: boolean }>(
        await trx.raw(
          `SELECT status, (lease_owner IS NOT NULL AND lease_expires_at > now()) AS going
           FROM notifications WHERE id = ? FOR UPDATE`,
          [id],
        ),
      );
      if (!row) return null;
      // A runner holds it under a live lease: it is going, nothing is taken back.
      if (row.going) return 'going' as const;
      if (row.status === 'scheduled') {
        await trx.raw(
          `UPDATE notifications SET status = 'cancelled', due_at = NULL, request = NULL, updated_at = now()
           WHERE id = ?`,
          [id],
        );
        return 1;
      }
      const lines = rows(
        await trx.raw(
          `UPDATE notification_channels SET skip_reason = 'cancelled', held_until = NULL, hold_reason = NULL
           WHERE notification_id = ? AND (held_until IS NOT NULL
             OR (digest_id = ANY(?::text[]) AND message_id IS NULL AND skip_reason IS NULL))
           RETURNING position`,
          [id, [...digestIds]],
        ),
      ).length;
      if (lines > 0) {
        await trx.raw(
          'UPDATE notifications SET due_at = NULL, request = NULL, updated_at = now() WHERE id = ?',
          [id],
        );
      }
      return lines;
    });
    if (cancelled === null) return null;
    const record = (await this.get(id))!;
    if (cancelled === 'going') return { record, cancelled: 0, going: true };
    return { record, cancelled, going: false };
  }

  async purgeBefore(before: Date, limit: number): Promise<number> {
    // Lines, jobs and topic members go with their notification (ON DELETE CASCADE).
    return rows(
      await this.knex.raw(
        `DELETE FROM notifications WHERE id IN (
           SELECT id FROM notifications
           WHERE created_at < ? AND due_at IS NULL
             AND NOT (topic IS NOT NULL AND parent_id IS NULL AND status NOT IN ('fanned_out', 'cancelled'))
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
    // A job whose notification was cancelled while scheduled is finished and the next one tried.
    for (let attempt = 0; attempt < 10; attempt++) {
      const claimed = await this.knex.transaction(async (trx) => {
        const [job] = rows<JobRow>(
          await trx.raw(
            `UPDATE notification_topic_jobs SET lease_owner = ?,
               lease_expires_at = now() + (? * interval '1 millisecond')
             WHERE notification_id = (
               SELECT notification_id FROM notification_topic_jobs
               WHERE finished_at IS NULL AND (lease_expires_at IS NULL OR lease_expires_at <= now())
                 AND (not_before IS NULL OR not_before <= now())
               ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
             RETURNING notification_id, topic, request, cursor, counted`,
            [owner, leaseMs],
          ),
        );
        if (!job) return null;
        const [row] = rows<NotificationRow>(
          await trx.raw(
            `UPDATE notifications SET status = 'fanning_out', updated_at = now()
             WHERE id = ? AND status <> 'cancelled' RETURNING *`,
            [job.notification_id],
          ),
        );
        if (!row) {
          await trx.raw(
            `UPDATE notification_topic_jobs SET finished_at = now(), request = NULL, lease_owner = NULL,
               lease_expires_at = NULL WHERE notification_id = ?`,
            [job.notification_id],
          );
          return 'cancelled' as const;
        }
        return {
          notification: toRecord(row),
          topic: job.topic,
          request: parseRequest(job.request),
          cursor: job.cursor,
          counted: job.counted,
        };
      });
      if (claimed !== 'cancelled') return claimed;
    }
    return null;
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
