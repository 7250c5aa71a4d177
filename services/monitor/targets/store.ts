/**
 * Where the targets area keeps each watched target's last known state (up or down, the last error,
 * failures in a row, the last change), so a restart does not forget a target that is down and
 * replicas show what the replica that probed last found. The port and its memory implementation;
 * the database one is below it, on the `monitor_target_states` table.
 */
import type { Knex } from 'knex';
import { cutText } from '../../../shared/text/cut';
import type { StoredTargetState } from './target-state';

/** Longest `last_error` kept, in code points (a probe's reason is short; this is the bound). */
export const MAX_STORED_ERROR_CHARS = 1024;

/** The targets' kept states, by the target's configured name. */
export interface TargetStateStore {
  /** The kept state of `name`, or null when none was kept. */
  load(name: string): Promise<StoredTargetState | null>;
  /** Keeps `state` as the state of `name` (replacing the one kept). */
  save(name: string, state: StoredTargetState): Promise<void>;
}

function bounded(state: StoredTargetState): StoredTargetState {
  return {
    ...state,
    lastError:
      state.lastError === null
        ? null
        : cutText(state.lastError, MAX_STORED_ERROR_CHARS, { unit: 'code_point', ellipsis: '…' }),
  };
}

function copy(state: StoredTargetState): StoredTargetState {
  return {
    ...state,
    lastProbeAt: state.lastProbeAt ? new Date(state.lastProbeAt) : null,
    lastChangeAt: state.lastChangeAt ? new Date(state.lastChangeAt) : null,
    ...(state.lastErrorAt ? { lastErrorAt: new Date(state.lastErrorAt) } : {}),
  };
}

/** The memory store (one process). */
export class MemoryTargetStateStore implements TargetStateStore {
  private readonly states = new Map<string, StoredTargetState>();

  async load(name: string): Promise<StoredTargetState | null> {
    const s = this.states.get(name);
    return s ? copy(s) : null;
  }

  async save(name: string, state: StoredTargetState): Promise<void> {
    this.states.set(name, copy(bounded(state)));
  }
}

interface Row {
  up: boolean | null;
  last_probe_at: Date | string | null;
  last_latency_ms: number | string | null;
  consecutive_failures: number | string;
  last_error: string | null;
  last_change_at: Date | string | null;
  last_error_at: Date | string | null;
}

const date = (v: Date | string | null): Date | null => (v === null ? null : new Date(v));

/** The database store (PostgreSQL and PGlite through knex). */
export class DatabaseTargetStateStore implements TargetStateStore {
  constructor(private readonly knex: Knex) {}

  async load(name: string): Promise<StoredTargetState | null> {
    const result = await this.knex.raw(
      `SELECT up, last_probe_at, last_latency_ms, consecutive_failures, last_error, last_change_at, last_error_at
         FROM monitor_target_states WHERE name = ?`,
      [name],
    );
    const row = (result as { rows: Row[] }).rows[0];
    if (!row) return null;
    return {
      up: row.up,
      lastProbeAt: date(row.last_probe_at),
      lastLatencyMs: row.last_latency_ms === null ? null : Number(row.last_latency_ms),
      consecutiveFailures: Number(row.consecutive_failures),
      lastError: row.last_error,
      lastChangeAt: date(row.last_change_at),
      ...(row.last_error_at !== null ? { lastErrorAt: date(row.last_error_at) } : {}),
    };
  }

  async save(name: string, state: StoredTargetState): Promise<void> {
    const s = bounded(state);
    await this.knex.raw(
      `INSERT INTO monitor_target_states
         (name, up, last_probe_at, last_latency_ms, consecutive_failures, last_error, last_change_at, last_error_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, now())
       ON CONFLICT (name) DO UPDATE SET up = EXCLUDED.up, last_probe_at = EXCLUDED.last_probe_at,
         last_latency_ms = EXCLUDED.last_latency_ms, consecutive_failures = EXCLUDED.consecutive_failures,
         last_error = EXCLUDED.last_error, last_change_at = EXCLUDED.last_change_at,
         last_error_at = EXCLUDED.last_error_at, updated_at = now()`,
      [
        name,
        s.up,
        s.lastProbeAt?.toISOString() ?? null,
        s.lastLatencyMs,
        s.consecutiveFailures,
        s.lastError,
        s.lastChangeAt?.toISOString() ?? null,
        s.lastErrorAt?.toISOString() ?? null,
      ],
    );
  }
}
