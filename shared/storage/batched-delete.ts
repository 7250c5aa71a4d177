/**
 * The one way a purge deletes many rows: in batches, each its own statement. One DELETE of a whole
 * backlog (a purge that fell far behind, a retention shortened) runs into
 * `database.statement_timeout_ms` on every pass, is rolled back, and never catches up; batches
 * commit as they go, so each pass makes progress, and a pass stops at a cap so it never holds the
 * purge job for long: what is left goes on the next pass.
 */
import type { Knex } from 'knex';
import { toNumber } from './database';

/** Default rows per batch: a statement far inside the statement timeout even with cascades. */
export const DELETE_BATCH_SIZE = 1_000;
/** Default batches per call: what one pass deletes at most (the rest waits for the next pass). */
export const DELETE_MAX_BATCHES = 100;

/** How a purge deletes: `batchSize` rows per statement, at most `maxBatches` statements per call. */
export interface DeleteBatches {
  batchSize?: number;
  maxBatches?: number;
}

/**
 * Deletes the rows of `from` matching `where`, a batch at a time, until none is left or the cap is
 * reached; answers how many went. `from` (a table, optionally with an alias `where` refers to) and
 * `where` are SQL written in code, never input; values go in `bindings`. A batch picks its rows by
 * `ctid` (a TID scan: no key needed, whatever the table's primary key), so the same helper serves
 * every table; a row changed meanwhile (new ctid) is left for the next pass.
 */
export async function deleteInBatches(
  knex: Knex,
  from: string,
  where: string,
  bindings: readonly Knex.RawBinding[],
  batches: DeleteBatches = {},
): Promise<number> {
  const batchSize = Math.max(1, Math.floor(batches.batchSize ?? DELETE_BATCH_SIZE));
  const maxBatches = Math.max(1, Math.floor(batches.maxBatches ?? DELETE_MAX_BATCHES));
  const sql = `DELETE FROM ${from} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${from} WHERE ${where} LIMIT ${batchSize}))`;
  let deleted = 0;
  for (let batch = 0; batch < maxBatches; batch++) {
    const result = (await knex.raw(sql, bindings)) as { rowCount?: number | null };
    const n = toNumber(result.rowCount ?? 0);
    deleted += n;
    if (n < batchSize) break;
  }
  return deleted;
}
