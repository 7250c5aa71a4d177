/**
 * Retention in the memory store: deleting finished records past their retention, with their events
 * and the event horizon, and erasing content earlier. The in-process counterpart of
 * database-retention.ts; the periodic job around it is retention.ts.
 */
import type { PurgeRequest, PurgeResult } from './store';
import { FINAL_STATUSES } from './types';
import type { MemoryRecords } from './memory-records';
import type { MemoryDeliveryEventLog } from './memory-event-log';

/**
 * One retention pass of at most `batchSize` records each: deletes records finished before
 * `deleteBefore` (with their events, moving each scope's horizon), erases the content of those
 * finished before `eraseBefore`.
 */
export function purgeExpired(
  records: MemoryRecords,
  events: MemoryDeliveryEventLog,
  request: PurgeRequest,
): PurgeResult {
  let erased = 0;
  let deleted = 0;
  const gone = new Set<string>();
  for (const r of [...records.byId.values()]) {
    if (r.finishedAt === null || !FINAL_STATUSES.includes(r.status)) continue;
    if (r.finishedAt < request.deleteBefore && deleted < request.batchSize) {
      records.delete(r);
      gone.add(r.id);
      deleted++;
    } else if (
      r.finishedAt < request.eraseBefore &&
      r.contentErasedAt === null &&
      erased < request.batchSize
    ) {
      r.payload = null;
      r.recipient = null;
      r.contentErasedAt = request.now;
      erased++;
    }
  }
  // The records' events go with them; the scope's horizon tells older cursors (RESET).
  events.eraseDeliveries(gone);
  return { erased, deleted };
}
