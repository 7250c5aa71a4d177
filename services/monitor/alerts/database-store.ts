/**
 * The AlertStore on PostgreSQL or PGlite (knex; migrations/20261128600000_alerts.ts). One open alert
 * per dedup key is the unique partial index `monitor_alerts_open_key_idx`: a trigger updates the open
 * row or inserts one (ON CONFLICT DO NOTHING, then updates what a racing replica inserted), so two
 * monitors never open two alerts for one key. The notification log's rows are inserted before the
 * send (ON CONFLICT DO NOTHING: the inserter sends); a `sending` row whose lease (the database's
 * clock) ran out is taken over by the next attempt. The timeline keeps the newest 100 entries.
 */
import type { Knex } from 'knex';
import { type DeleteBatches, deleteInBatches } from '../../../shared/storage/batched-delete';
import { jsonColumn, rows, toNumber } from '../../../shared/storage/database';
import type { Alert } from './alert';
import { compileMatchers, matchesAll } from './matchers';
import type {
  AlertCursor,
  AlertEntry,
  AlertFilter,
  AlertState,
  AlertStore,
  NotificationKey,
  Silence,
  TimelineEntry,
  TriggerOutcome,
  WeeklyWindow,
} from './store';

/** Timeline entries kept per alert. */
export const DATABASE_TIMELINE_KEPT = 100;

interface AlertRow {
  id: string;
  dedup_key: string;
  state: AlertState;
  alert: Alert | string;
  labels: Record<string, string> | string;
  count: number | string;
  last_seen_at: number | string;
  silenced_by: string;
  inhibited_by: string;
  notified: boolean;
  acknowledged_by: string;
  resolved_by: string;
  resolved_at: number | string;
}

interface SilenceRow {
  id: string;
  matchers: Silence['matchers'] | string;
  starts_at: number | string;
  ends_at: number | string;
  created_by: string;
  comment: string;
  recurrence: WeeklyWindow | string | null;
  created_at: number | string;
  expired_at: number | string;
  reminded: string[] | string;
}

function toEntry(r: AlertRow): AlertEntry {
  return {
    alert: jsonColumn<Alert>(r.alert),
    dedupKey: r.dedup_key,
    state: r.state,
    labels: jsonColumn<Record<string, string>>(r.labels),
    count: toNumber(r.count),
    lastSeenAt: toNumber(r.last_seen_at),
    silencedBy: r.silenced_by,
    inhibitedBy: r.inhibited_by,
    notified: r.notified,
    acknowledgedBy: r.acknowledged_by,
    resolvedBy: r.resolved_by,
    resolvedAt: toNumber(r.resolved_at),
  };
}

function toSilence(r: SilenceRow): Silence {
  const recurrence = r.recurrence === null ? undefined : jsonColumn<WeeklyWindow>(r.recurrence);
  return {
    id: r.id,
    matchers: jsonColumn<Silence['matchers']>(r.matchers),
    startsAt: toNumber(r.starts_at),
    endsAt: toNumber(r.ends_at),
    createdBy: r.created_by,
    comment: r.comment,
    ...(recurrence ? { recurrence } : {}),
    createdAt: toNumber(r.created_at),
    expiredAt: toNumber(r.expired_at),
    reminded: jsonColumn<string[]>(r.reminded),
  };
}

/** See the file comment. */
export class DatabaseAlertStore implements AlertStore {
  /** `purgeBatches`: the purge's batch size and per-pass cap (shared/storage/batched-delete). */
  constructor(
    private readonly knex: Knex,
    private readonly purgeBatches: DeleteBatches = {},
  ) {}

  async trigger(alert: Alert, dedupKey: string, labels: Record<string, string>): Promise<TriggerOutcome> {
    // Update the open alert of the key, else insert; a replica inserting the same key at the same
    // moment makes the insert a no-op, and the next update finds its row.
    for (let attempt = 0; attempt < 3; attempt++) {
      const updated = rows<AlertRow>(
        await this.knex.raw(
          `UPDATE monitor_alerts
              SET count = count + 1, last_seen_at = ?, severity = ?, labels = ?::jsonb,
                  alert = alert || jsonb_build_object('title', ?::text, 'message', ?::text, 'severity', ?::text,
                                                      'context', ?::jsonb)
            WHERE dedup_key = ? AND state <> 'resolved'
        RETURNING *`,
          [
            alert.firedAt,
            alert.severity.toLowerCase(),
            JSON.stringify(labels),
            alert.title,
            alert.message,
            alert.severity,
            JSON.stringify(alert.context),
            dedupKey,
          ],
        ),
      );
      if (updated[0]) return { entry: toEntry(updated[0]), opened: false };
      const inserted = rows<AlertRow>(
        await this.knex.raw(
          `INSERT INTO monitor_alerts (id, dedup_key, state, alert, labels, severity, fired_at, last_seen_at)
           VALUES (?, ?, 'triggered', ?::jsonb, ?::jsonb, ?, ?, ?)
           ON CONFLICT (dedup_key) WHERE state <> 'resolved' DO NOTHING
           RETURNING *`,
          [
            alert.id,
            dedupKey,
            JSON.stringify(alert),
            JSON.stringify(labels),
            alert.severity.toLowerCase(),
            alert.firedAt,
            alert.firedAt,
          ],
        ),
      );
      if (inserted[0]) return { entry: toEntry(inserted[0]), opened: true };
    }
    throw new Error(`dedup key contended: could neither update nor open an alert`);
  }

  async get(id: string): Promise<AlertEntry | undefined> {
    const r = rows<AlertRow>(await this.knex.raw('SELECT * FROM monitor_alerts WHERE id = ?', [id]));
    return r[0] ? toEntry(r[0]) : undefined;
  }

  async openByKey(dedupKey: string): Promise<AlertEntry | undefined> {
    const r = rows<AlertRow>(
      await this.knex.raw(`SELECT * FROM monitor_alerts WHERE dedup_key = ? AND state <> 'resolved'`, [
        dedupKey,
      ]),
    );
    return r[0] ? toEntry(r[0]) : undefined;
  }

  async acknowledge(id: string, by: string): Promise<AlertEntry | undefined> {
    const r = rows<AlertRow>(
      await this.knex.raw(
        `UPDATE monitor_alerts SET state = 'acknowledged', acknowledged_by = ?
          WHERE id = ? AND state = 'triggered' RETURNING *`,
        [by, id],
      ),
    );
    return r[0] ? toEntry(r[0]) : undefined;
  }

  async resolve(id: string, by: string, at: number): Promise<AlertEntry | undefined> {
    const r = rows<AlertRow>(
      await this.knex.raw(
        `UPDATE monitor_alerts SET state = 'resolved', resolved_by = ?, resolved_at = ?
          WHERE id = ? AND state <> 'resolved' RETURNING *`,
        [by, at, id],
      ),
    );
    return r[0] ? toEntry(r[0]) : undefined;
  }

  async setMute(id: string, mute: { silencedBy: string; inhibitedBy: string }): Promise<void> {
    await this.knex.raw('UPDATE monitor_alerts SET silenced_by = ?, inhibited_by = ? WHERE id = ?', [
      mute.silencedBy,
      mute.inhibitedBy,
      id,
    ]);
  }

  async markNotified(id: string): Promise<void> {
    await this.knex.raw('UPDATE monitor_alerts SET notified = true WHERE id = ? AND NOT notified', [id]);
  }

  async addTimeline(id: string, entry: TimelineEntry): Promise<void> {
    await this.knex.raw(
      `INSERT INTO monitor_alert_timeline (alert_id, at, kind, actor, detail)
       SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM monitor_alerts WHERE id = ?)`,
      [id, entry.at, entry.kind, entry.actor, entry.detail, id],
    );
    await this.knex.raw(
      `DELETE FROM monitor_alert_timeline WHERE alert_id = ? AND seq <= (
         SELECT seq FROM monitor_alert_timeline WHERE alert_id = ? ORDER BY seq DESC OFFSET ? LIMIT 1)`,
      [id, id, DATABASE_TIMELINE_KEPT],
    );
  }

  async timeline(id: string, limit: number): Promise<TimelineEntry[]> {
    const r = rows<{ at: number | string; kind: TimelineEntry['kind']; actor: string; detail: string }>(
      await this.knex.raw(
        `SELECT at, kind, actor, detail FROM (
           SELECT * FROM monitor_alert_timeline WHERE alert_id = ? ORDER BY seq DESC LIMIT ?) t
         ORDER BY seq`,
        [id, limit],
      ),
    );
    return r.map((t) => ({ at: toNumber(t.at), kind: t.kind, actor: t.actor, detail: t.detail }));
  }

  async list(filter: AlertFilter, after: AlertCursor | undefined, limit: number): Promise<AlertEntry[]> {
    const matchers = compileMatchers(filter.matchers ?? [], 'matchers');
    // Equality on a non-empty value narrows in SQL (jsonb containment); every matcher is checked here.
    const contains = Object.fromEntries(
      (filter.matchers ?? []).filter((m) => m.op === '=' && m.value !== '').map((m) => [m.name, m.value]),
    );
    const out: AlertEntry[] = [];
    let cursor = after;
    const batch = Math.max(limit, 100);
    for (;;) {
      const where: string[] = [];
      const bindings: Knex.RawBinding[] = [];
      if (filter.states?.length) {
        where.push(`state IN (${filter.states.map(() => '?').join(', ')})`);
        bindings.push(...filter.states);
      }
      if (filter.severities?.length) {
        where.push(`severity IN (${filter.severities.map(() => '?').join(', ')})`);
        bindings.push(...filter.severities);
      }
      if (Object.keys(contains).length > 0) {
        where.push('labels @> ?::jsonb');
        bindings.push(JSON.stringify(contains));
      }
      if (cursor) {
        where.push('(fired_at, id) < (?, ?)');
        bindings.push(cursor.firedAt, cursor.id);
      }
      const page = rows<AlertRow & { fired_at: number | string }>(
        await this.knex.raw(
          `SELECT * FROM monitor_alerts ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
           ORDER BY fired_at DESC, id DESC LIMIT ?`,
          [...bindings, batch],
        ),
      );
      for (const row of page) {
        const entry = toEntry(row);
        if (matchesAll(matchers, entry.labels)) out.push(entry);
        if (out.length >= limit) return out;
      }
      if (page.length < batch) return out;
      const last = page[page.length - 1]!;
      cursor = { firedAt: toNumber(last.fired_at), id: last.id };
    }
  }

  async open(limit: number): Promise<AlertEntry[]> {
    const r = rows<AlertRow>(
      await this.knex.raw(
        `SELECT * FROM monitor_alerts WHERE state <> 'resolved' ORDER BY fired_at DESC, id DESC LIMIT ?`,
        [limit],
      ),
    );
    return r.map(toEntry);
  }

  async openMatching(
    alertname: string | undefined,
    equal: Record<string, string>,
    limit: number,
  ): Promise<AlertEntry[]> {
    // Non-empty pairs narrow in SQL; an absent label equals '' (checked here, as the lifecycle does).
    const contains: Record<string, string> = Object.fromEntries(
      Object.entries(equal).filter(([, v]) => v !== ''),
    );
    if (alertname !== undefined && alertname !== '') contains.alertname = alertname;
    const r = rows<AlertRow>(
      await this.knex.raw(
        `SELECT * FROM monitor_alerts WHERE state <> 'resolved' AND labels @> ?::jsonb
          ORDER BY fired_at DESC, id DESC LIMIT ?`,
        [JSON.stringify(contains), limit * 4],
      ),
    );
    return r
      .map(toEntry)
      .filter(
        (e) =>
          (alertname === undefined || (e.labels.alertname ?? '') === alertname) &&
          Object.entries(equal).every(([k, v]) => (e.labels[k] ?? '') === v),
      )
      .slice(0, limit);
  }

  async createSilence(s: Silence): Promise<void> {
    await this.knex.raw(
      `INSERT INTO monitor_silences (id, matchers, starts_at, ends_at, created_by, comment, recurrence,
                                     created_at, expired_at, reminded)
       VALUES (?, ?::jsonb, ?, ?, ?, ?, ?::jsonb, ?, ?, ?::jsonb)`,
      [
        s.id,
        JSON.stringify(s.matchers),
        s.startsAt,
        s.endsAt,
        s.createdBy,
        s.comment,
        s.recurrence ? JSON.stringify(s.recurrence) : null,
        s.createdAt,
        s.expiredAt,
        JSON.stringify(s.reminded),
      ],
    );
  }

  async getSilence(id: string): Promise<Silence | undefined> {
    const r = rows<SilenceRow>(await this.knex.raw('SELECT * FROM monitor_silences WHERE id = ?', [id]));
    return r[0] ? toSilence(r[0]) : undefined;
  }

  async activeSilences(now: number, limit: number): Promise<Silence[]> {
    const r = rows<SilenceRow>(
      await this.knex.raw(
        `SELECT * FROM monitor_silences WHERE expired_at = 0 AND ends_at > ?
          ORDER BY created_at DESC, id DESC LIMIT ?`,
        [now, limit],
      ),
    );
    return r.map(toSilence);
  }

  async listSilences(after: AlertCursor | undefined, limit: number): Promise<Silence[]> {
    const r = rows<SilenceRow>(
      await this.knex.raw(
        `SELECT * FROM monitor_silences ${after ? 'WHERE (created_at, id) < (?, ?)' : ''}
          ORDER BY created_at DESC, id DESC LIMIT ?`,
        after ? [after.firedAt, after.id, limit] : [limit],
      ),
    );
    return r.map(toSilence);
  }

  async expireSilence(id: string, at: number): Promise<Silence | undefined> {
    await this.knex.raw(
      `UPDATE monitor_silences SET expired_at = ?, ends_at = ? WHERE id = ? AND expired_at = 0 AND ends_at > ?`,
      [at, at, id, at],
    );
    return this.getSilence(id);
  }

  async markReminded(id: string, reminder: string): Promise<boolean> {
    const r = rows<{ id: string }>(
      await this.knex.raw(
        `UPDATE monitor_silences SET reminded = reminded || ?::jsonb
          WHERE id = ? AND NOT reminded @> ?::jsonb RETURNING id`,
        [JSON.stringify([reminder]), id, JSON.stringify([reminder])],
      ),
    );
    return r.length > 0;
  }

  async claimNotification(key: NotificationKey, owner: string, leaseMs: number): Promise<boolean> {
    const inserted = rows<{ step: string }>(
      await this.knex.raw(
        `INSERT INTO monitor_notification_log (group_key, receiver, step, state, owner, lease_until)
         VALUES (?, ?, ?, 'sending', ?, now() + (? * interval '1 millisecond'))
         ON CONFLICT (group_key, receiver, step) DO NOTHING RETURNING step`,
        [key.groupKey, key.receiver, key.step, owner, leaseMs],
      ),
    );
    if (inserted.length > 0) return true;
    // A sender that crashed between its row and the send: its lease ran out, the next attempt sends.
    const taken = rows<{ step: string }>(
      await this.knex.raw(
        `UPDATE monitor_notification_log SET owner = ?, lease_until = now() + (? * interval '1 millisecond')
          WHERE group_key = ? AND receiver = ? AND step = ? AND state = 'sending' AND lease_until <= now()
        RETURNING step`,
        [owner, leaseMs, key.groupKey, key.receiver, key.step],
      ),
    );
    return taken.length > 0;
  }

  async notificationSent(key: NotificationKey): Promise<boolean> {
    const found = rows<{ state: string }>(
      await this.knex.raw(
        `SELECT state FROM monitor_notification_log WHERE group_key = ? AND receiver = ? AND step = ?`,
        [key.groupKey, key.receiver, key.step],
      ),
    );
    return found[0]?.state === 'sent';
  }

  async completeNotification(key: NotificationKey, owner: string): Promise<void> {
    await this.knex.raw(
      `UPDATE monitor_notification_log SET state = 'sent'
        WHERE group_key = ? AND receiver = ? AND step = ? AND owner = ?`,
      [key.groupKey, key.receiver, key.step, owner],
    );
  }

  async releaseNotification(key: NotificationKey, owner: string): Promise<void> {
    await this.knex.raw(
      `DELETE FROM monitor_notification_log
        WHERE group_key = ? AND receiver = ? AND step = ? AND owner = ? AND state = 'sending'`,
      [key.groupKey, key.receiver, key.step, owner],
    );
  }

  async purge(before: number): Promise<number> {
    // In batches, each table capped per pass; an alert's timeline and escalation go with it (ON
    // DELETE CASCADE), so they are bounded by the alerts' batch too.
    const purge = (table: string, where: string) =>
      deleteInBatches(this.knex, table, where, [before], this.purgeBatches);
    return (
      (await purge('monitor_alerts', `state = 'resolved' AND resolved_at < ?`)) +
      (await purge('monitor_silences', 'ends_at < ?')) +
      (await purge('monitor_notification_log', 'created_at < to_timestamp(? / 1000.0)'))
    );
  }
}
