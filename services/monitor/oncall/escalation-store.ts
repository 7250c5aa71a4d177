/**
 * The escalation state port (one row per escalated alert: its policy, round, step, who the step
 * paged, the pages so far) and the acknowledgment codes (one per page), with the memory
 * implementation. The database one is escalation-database-store.ts (migration
 * 20261128700000_oncall_escalation). Times are milliseconds since the epoch on the engine's clock.
 */

/** Where an escalation is. */
export type EscalationStatus = 'active' | 'stopped' | 'exhausted';

/** One page sent (or attempted) by the engine. */
export interface PageRecord {
  userId: string;
  /** 0-based round (a repeat of the whole list) and step. */
  round: number;
  step: number;
  at: number;
  /** Channels the notification service fanned out to (`email`, `sms`, `push`, `inbox`), or the failure. */
  channels: string[];
  error?: string;
}

/** An alert's escalation. */
export interface EscalationState {
  alertId: string;
  policy: string;
  round: number;
  step: number;
  /** When the current step began (its pages went out then; the next step is due `wait_minutes` later). */
  stepStartedAt: number;
  /** The user ids the current step pages (schedules resolved when the step began). */
  targets: string[];
  status: EscalationStatus;
  /** Why it stopped: `acknowledged`, `resolved`, `policy removed`... ('' while active). */
  reason: string;
  /** The pages so far, oldest first, at most {@link MAX_PAGE_RECORDS} (the newest kept). */
  pages: PageRecord[];
  startedAt: number;
  updatedAt: number;
}

/** A position in a policy. */
export interface StepPosition {
  round: number;
  step: number;
}

/** An acknowledgment code: sent with one page, good for that alert from the paged user's phones. */
export interface AckCode {
  code: string;
  /** The page it belongs to (alert, round, step, user): the same page always gets the same code. */
  pageKey: string;
  alertId: string;
  userId: string;
  /** The user's phone numbers (E.164) when they were paged. */
  phones: string[];
  expiresAt: number;
}

/** Pages kept per escalation. */
export const MAX_PAGE_RECORDS = 50;

/** The port. Every method is safe across replicas sharing one database. */
export interface EscalationStore {
  /** Starts an escalation unless the alert has one (any status); true when this call started it. */
  start(state: EscalationState): Promise<boolean>;
  get(alertId: string): Promise<EscalationState | undefined>;
  /** The escalations of these alerts (those that have one). */
  getMany(alertIds: readonly string[]): Promise<EscalationState[]>;
  /** Active escalations, oldest first, at most `limit`. */
  active(limit: number): Promise<EscalationState[]>;
  /** Moves an active escalation from `from` to `to` (compare and set); false when it was not at `from`. */
  advance(
    alertId: string,
    from: StepPosition,
    to: StepPosition & { stepStartedAt: number; targets: string[] },
    at: number,
  ): Promise<boolean>;
  /** Ends an active escalation; false when it was not active. */
  finish(alertId: string, status: 'stopped' | 'exhausted', reason: string, at: number): Promise<boolean>;
  /** Appends a page (the oldest beyond {@link MAX_PAGE_RECORDS} leave). */
  recordPage(alertId: string, page: PageRecord): Promise<void>;
  /**
   * The code of page `pageKey`: the existing one, or a new one drawn from `draw` that no live code
   * (unexpired at `now`) holds; a draw that collides is retried (at most `maxDraws` times, then
   * throws).
   */
  issueCode(
    fields: Omit<AckCode, 'code'>,
    draw: () => string,
    now: number,
    maxDraws?: number,
  ): Promise<AckCode>;
  /** The code's row, unless it expired at `now`. */
  liveCode(code: string, now: number): Promise<AckCode | undefined>;
  /** Deletes codes expired before `before`; returns how many went. */
  purgeCodes(before: number): Promise<number>;
}

/** Bounds of the memory store. */
export interface MemoryEscalationStoreBounds {
  /** Escalations kept; the oldest finished ones leave first. */
  maxEscalations: number;
  /** Codes kept; the oldest leave first. */
  maxCodes: number;
}

const clone = <T>(v: T): T => structuredClone(v);

/** The memory store (tests, `store_backend: memory`). */
export class MemoryEscalationStore implements EscalationStore {
  private readonly rows = new Map<string, EscalationState>();
  private readonly codes = new Map<string, AckCode>();
  private readonly byPage = new Map<string, string>();

  constructor(
    private readonly bounds: MemoryEscalationStoreBounds = { maxEscalations: 10_000, maxCodes: 100_000 },
  ) {}

  async start(state: EscalationState): Promise<boolean> {
    if (this.rows.has(state.alertId)) return false;
    if (this.rows.size >= this.bounds.maxEscalations) {
      const finished = [...this.rows.values()].find((r) => r.status !== 'active');
      this.rows.delete((finished ?? this.rows.values().next().value!).alertId);
    }
    this.rows.set(state.alertId, clone(state));
    return true;
  }

  async get(alertId: string): Promise<EscalationState | undefined> {
    const row = this.rows.get(alertId);
    return row && clone(row);
  }

  async getMany(alertIds: readonly string[]): Promise<EscalationState[]> {
    return alertIds.flatMap((id) => {
      const row = this.rows.get(id);
      return row ? [clone(row)] : [];
    });
  }

  async active(limit: number): Promise<EscalationState[]> {
    return [...this.rows.values()]
      .filter((r) => r.status === 'active')
      .sort((a, b) => a.startedAt - b.startedAt)
      .slice(0, limit)
      .map(clone);
  }

  async advance(
    alertId: string,
    from: StepPosition,
    to: StepPosition & { stepStartedAt: number; targets: string[] },
    at: number,
  ): Promise<boolean> {
    const row = this.rows.get(alertId);
    if (!row || row.status !== 'active' || row.round !== from.round || row.step !== from.step) return false;
    Object.assign(row, {
      round: to.round,
      step: to.step,
      stepStartedAt: to.stepStartedAt,
      targets: [...to.targets],
      updatedAt: at,
    });
    return true;
  }

  async finish(
    alertId: string,
    status: 'stopped' | 'exhausted',
    reason: string,
    at: number,
  ): Promise<boolean> {
    const row = this.rows.get(alertId);
    if (!row || row.status !== 'active') return false;
    Object.assign(row, { status, reason, updatedAt: at });
    return true;
  }

  async recordPage(alertId: string, page: PageRecord): Promise<void> {
    const row = this.rows.get(alertId);
    if (!row) return;
    row.pages.push(clone(page));
    if (row.pages.length > MAX_PAGE_RECORDS) row.pages.splice(0, row.pages.length - MAX_PAGE_RECORDS);
  }

  async issueCode(
    fields: Omit<AckCode, 'code'>,
    draw: () => string,
    now: number,
    maxDraws = 20,
  ): Promise<AckCode> {
    const existing = this.byPage.get(fields.pageKey);
    if (existing !== undefined) {
      const row = this.codes.get(existing);
      if (row && row.pageKey === fields.pageKey) return clone(row);
    }
    for (let i = 0; i < maxDraws; i++) {
      const code = draw();
      const held = this.codes.get(code);
      if (held && held.expiresAt > now) continue;
      if (held) this.byPage.delete(held.pageKey);
      if (!held && this.codes.size >= this.bounds.maxCodes) {
        const oldest = this.codes.values().next().value!;
        this.codes.delete(oldest.code);
        this.byPage.delete(oldest.pageKey);
      }
      const row: AckCode = { ...clone(fields), code };
      this.codes.delete(code);
      this.codes.set(code, row);
      this.byPage.set(fields.pageKey, code);
      return clone(row);
    }
    throw new Error(`no free acknowledgment code after ${maxDraws} draws`);
  }

  async liveCode(code: string, now: number): Promise<AckCode | undefined> {
    const row = this.codes.get(code);
    return row && row.expiresAt > now ? clone(row) : undefined;
  }

  async purgeCodes(before: number): Promise<number> {
    let n = 0;
    for (const [code, row] of this.codes) {
      if (row.expiresAt < before) {
        this.codes.delete(code);
        this.byPage.delete(row.pageKey);
        n++;
      }
    }
    return n;
  }
}
