/**
 * The escalation store on the monitor's database (knex: PostgreSQL and PGlite; migration
 * 20261128700000_oncall_escalation). Steps move by compare-and-set on (round, step); codes are
 * inserted with `ON CONFLICT DO NOTHING` after an expired holder of the drawn code is deleted, so two
 * replicas never hand out one live code twice.
 */
import type { Knex } from 'knex';
import { type DeleteBatches, deleteInBatches } from '../../../shared/storage/batched-delete';
import {
  type AckCode,
  type EscalationState,
  type EscalationStatus,
  type EscalationStore,
  MAX_PAGE_RECORDS,
  type PageRecord,
  type StepPosition,
} from './escalation-store';
import { jsonColumn, rows } from '../../../shared/storage/database';

interface EscalationRow {
  alert_id: string;
  policy: string;
  round: number;
  step: number;
  step_started_at: number | string;
  targets: string[] | string;
  status: EscalationStatus;
  reason: string;
  pages: PageRecord[] | string;
  started_at: number | string;
  updated_at: number | string;
}

interface CodeRow {
  code: string;
  page_key: string;
  alert_id: string;
  user_id: string;
  phones: string[] | string;
  expires_at: number | string;
}

// bigint comes back as a string from `pg`, as a number from PGlite.
const num = (v: number | string): number => Number(v);

function toState(r: EscalationRow): EscalationState {
  return {
    alertId: r.alert_id,
    policy: r.policy,
    round: num(r.round),
    step: num(r.step),
    stepStartedAt: num(r.step_started_at),
    targets: jsonColumn(r.targets),
    status: r.status,
    reason: r.reason,
    pages: jsonColumn(r.pages),
    startedAt: num(r.started_at),
    updatedAt: num(r.updated_at),
  };
}

function toCode(r: CodeRow): AckCode {
  return {
    code: r.code,
    pageKey: r.page_key,
    alertId: r.alert_id,
    userId: r.user_id,
    phones: jsonColumn(r.phones),
    expiresAt: num(r.expires_at),
  };
}

/** See the file comment. */
export class DatabaseEscalationStore implements EscalationStore {
  /** `purgeBatches`: the purge's batch size and per-pass cap (shared/storage/batched-delete). */
  constructor(
    private readonly knex: Knex,
    private readonly purgeBatches: DeleteBatches = {},
  ) {}

  async start(s: EscalationState): Promise<boolean> {
    // The alert may be gone (purged) by now: nothing to escalate then.
    const inserted = rows<{ alert_id: string }>(
      await this.knex.raw(
        `INSERT INTO monitor_oncall_escalations
           (alert_id, policy, round, step, step_started_at, targets, status, reason, pages, started_at, updated_at)
         SELECT ?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?::jsonb, ?, ?
          WHERE EXISTS (SELECT 1 FROM monitor_alerts WHERE id = ?)
         ON CONFLICT (alert_id) DO NOTHING RETURNING alert_id`,
        [
          s.alertId,
          s.policy,
          s.round,
          s.step,
          s.stepStartedAt,
          JSON.stringify(s.targets),
          s.status,
          s.reason,
          JSON.stringify(s.pages),
          s.startedAt,
          s.updatedAt,
          s.alertId,
        ],
      ),
    );
    return inserted.length > 0;
  }

  async get(alertId: string): Promise<EscalationState | undefined> {
    const r = rows<EscalationRow>(
      await this.knex.raw('SELECT * FROM monitor_oncall_escalations WHERE alert_id = ?', [alertId]),
    );
    return r[0] && toState(r[0]);
  }

  async getMany(alertIds: readonly string[]): Promise<EscalationState[]> {
    if (alertIds.length === 0) return [];
    const r = rows<EscalationRow>(
      await this.knex.raw('SELECT * FROM monitor_oncall_escalations WHERE alert_id = ANY(?::uuid[])', [
        [...alertIds],
      ]),
    );
    return r.map(toState);
  }

  async active(limit: number): Promise<EscalationState[]> {
    const r = rows<EscalationRow>(
      await this.knex.raw(
        `SELECT * FROM monitor_oncall_escalations WHERE status = 'active' ORDER BY started_at, alert_id LIMIT ?`,
        [limit],
      ),
    );
    return r.map(toState);
  }

  async advance(
    alertId: string,
    from: StepPosition,
    to: StepPosition & { stepStartedAt: number; targets: string[] },
    at: number,
  ): Promise<boolean> {
    const r = rows<{ alert_id: string }>(
      await this.knex.raw(
        `UPDATE monitor_oncall_escalations
            SET round = ?, step = ?, step_started_at = ?, targets = ?::jsonb, updated_at = ?
          WHERE alert_id = ? AND status = 'active' AND round = ? AND step = ?
        RETURNING alert_id`,
        [to.round, to.step, to.stepStartedAt, JSON.stringify(to.targets), at, alertId, from.round, from.step],
      ),
    );
    return r.length > 0;
  }

  async finish(
    alertId: string,
    status: 'stopped' | 'exhausted',
    reason: string,
    at: number,
  ): Promise<boolean> {
    const r = rows<{ alert_id: string }>(
      await this.knex.raw(
        `UPDATE monitor_oncall_escalations SET status = ?, reason = ?, updated_at = ?
          WHERE alert_id = ? AND status = 'active' RETURNING alert_id`,
        [status, reason, at, alertId],
      ),
    );
    return r.length > 0;
  }

  async recordPage(alertId: string, page: PageRecord): Promise<void> {
    await this.knex.transaction(async (trx) => {
      const r = rows<{ pages: PageRecord[] | string }>(
        await trx.raw('SELECT pages FROM monitor_oncall_escalations WHERE alert_id = ? FOR UPDATE', [
          alertId,
        ]),
      );
      if (!r[0]) return;
      const pages = [...jsonColumn(r[0].pages), page].slice(-MAX_PAGE_RECORDS);
      await trx.raw('UPDATE monitor_oncall_escalations SET pages = ?::jsonb WHERE alert_id = ?', [
        JSON.stringify(pages),
        alertId,
      ]);
    });
  }

  async issueCode(
    fields: Omit<AckCode, 'code'>,
    draw: () => string,
    now: number,
    maxDraws = 20,
  ): Promise<AckCode> {
    for (let i = 0; i < maxDraws; i++) {
      const existing = rows<CodeRow>(
        await this.knex.raw('SELECT * FROM monitor_oncall_ack_codes WHERE page_key = ?', [fields.pageKey]),
      );
      if (existing[0]) return toCode(existing[0]);
      const code = draw();
      await this.knex.raw('DELETE FROM monitor_oncall_ack_codes WHERE code = ? AND expires_at <= ?', [
        code,
        now,
      ]);
      const inserted = rows<CodeRow>(
        await this.knex.raw(
          `INSERT INTO monitor_oncall_ack_codes (code, page_key, alert_id, user_id, phones, expires_at)
           VALUES (?, ?, ?, ?, ?::jsonb, ?) ON CONFLICT DO NOTHING RETURNING *`,
          [
            code,
            fields.pageKey,
            fields.alertId,
            fields.userId,
            JSON.stringify(fields.phones),
            fields.expiresAt,
          ],
        ),
      );
      if (inserted[0]) return toCode(inserted[0]);
    }
    throw new Error(`no free acknowledgment code after ${maxDraws} draws`);
  }

  async liveCode(code: string, now: number): Promise<AckCode | undefined> {
    const r = rows<CodeRow>(
      await this.knex.raw('SELECT * FROM monitor_oncall_ack_codes WHERE code = ? AND expires_at > ?', [
        code,
        now,
      ]),
    );
    return r[0] && toCode(r[0]);
  }

  async purgeCodes(before: number): Promise<number> {
    return deleteInBatches(
      this.knex,
      'monitor_oncall_ack_codes',
      'expires_at < ?',
      [before],
      this.purgeBatches,
    );
  }
}
