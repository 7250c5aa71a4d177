/**
 * The suppression check before an attempt: the worker hands every claim to `screenClaimed`, which
 * applies THE suppression rule (`applySuppressionRule`, the one the submit applied) to the claimed
 * records and acts on its verdicts in the store. Kept out of the worker so the worker only asks
 * "which of these may I send".
 */
import type { Logger } from '../../../shared/logging/logger';
import type { DeliveryMetrics } from './metrics';
import type { DeliveryStore } from './store';
import {
  applySuppressionRule,
  recipientsOf,
  logUncheckedSuppression,
  type SuppressionChecker,
  type SuppressionVerdict,
  type WithoutRecipients,
} from './suppression';
import { SUPPRESSED_ERROR, type DeliveryRecord } from './types';

/** What `screenClaimed` works with: the worker's store, lease owner, clock, list and telemetry. */
export interface ClaimScreen {
  store: DeliveryStore;
  /** The lease owner of the claimed records. */
  owner: string;
  clock: () => Date;
  suppression: Pick<SuppressionChecker, 'findSuppressed' | 'countStopped'>;
  /** Per channel, how suppressed recipients are left out of a payload (none: any stops the send). */
  withoutRecipients?: Partial<Record<DeliveryRecord['channel'], WithoutRecipients>>;
  /** How long a record waits when the list cannot be read (no attempt is counted). */
  deferMs(record: DeliveryRecord): number;
  metrics?: DeliveryMetrics;
  log: Logger;
}

/**
 * The records of one claim (`channel`) that may be sent now, after the suppression rule: recipients
 * suppressed after acceptance (a receipt or a provider error while the record waited or retried,
 * also before a failover) are never contacted. A stopped record ends FAILED / recipient_suppressed
 * without an attempt; a narrowed one is stored without the suppressed recipients (`store.leaveOut`)
 * and returned as stored. A list that cannot be read defers every checked record (`store.defer`):
 * none is sent. One list query per claim.
 */
export async function screenClaimed(
  screen: ClaimScreen,
  channel: DeliveryRecord['channel'],
  records: readonly DeliveryRecord[],
): Promise<DeliveryRecord[]> {
  // An erased record has nobody to check (its attempt fails for the erased content).
  const rest = records.filter((r) => r.recipient === null || r.payload === null);
  const checked = records.filter((r) => r.recipient !== null && r.payload !== null);
  if (checked.length === 0) return rest;
  let verdicts: SuppressionVerdict[];
  try {
    verdicts = await applySuppressionRule(
      screen.suppression,
      checked.map((r) => ({
        channel,
        recipients: recipientsOf(channel, r.recipient!),
        payload: r.payload,
        withoutRecipients: screen.withoutRecipients?.[channel],
      })),
      'claim',
    );
  } catch (err) {
    logUncheckedSuppression(
      screen.log,
      err,
      { channel, deferred: checked.length },
      {
        timeout: 'suppression lookup before the attempt timed out: deferred, not sent',
        failed: 'suppression list unreadable before the attempt: deferred, not sent',
      },
    );
    for (const r of checked) {
      const now = screen.clock();
      const nextAttemptAt = new Date(now.getTime() + screen.deferMs(r));
      await screen.store.defer(r.id, screen.owner, { nextAttemptAt, now, createdAt: r.createdAt });
    }
    return rest;
  }
  for (const [i, r] of checked.entries()) {
    const verdict = verdicts[i]!;
    if (verdict.kind === 'clear') rest.push(r);
    else if (verdict.kind === 'stopped') await stop(screen, r);
    else {
      const narrowed = await leaveOut(screen, r, verdict);
      if (narrowed) rest.push(narrowed);
    }
  }
  return rest;
}

/** Ends a claimed record FAILED / recipient_suppressed without an attempt. */
async function stop(screen: ClaimScreen, r: DeliveryRecord): Promise<void> {
  const updated = await screen.store.completeAttempt(r.id, screen.owner, {
    attempt: null,
    lastError: SUPPRESSED_ERROR,
    status: 'failed',
    failure: 'recipient_suppressed',
    nextAttemptAt: null,
    now: screen.clock(),
    createdAt: r.createdAt,
  });
  if (!updated) return;
  screen.suppression.countStopped(r.channel, 'stopped');
  screen.metrics?.deliveries.inc({ channel: r.channel, backend: r.backend, outcome: 'failed' });
  screen.log.info(
    { deliveryId: r.id, backend: r.backend, recipient: r.maskedRecipient },
    'delivery stopped: its recipient was suppressed after it was accepted',
  );
}

/** Stores a claimed record without its suppressed recipients; the record to send, or null (lease lost). */
async function leaveOut(
  screen: ClaimScreen,
  r: DeliveryRecord,
  verdict: Extract<SuppressionVerdict, { kind: 'partial' }>,
): Promise<DeliveryRecord | null> {
  const suppressedRecipients = [...new Set([...r.suppressedRecipients, ...verdict.suppressedRecipients])];
  const { recipient, maskedRecipient, payload } = verdict;
  const change = { recipient, maskedRecipient, payload, suppressedRecipients, now: screen.clock() };
  if (!(await screen.store.leaveOut(r.id, screen.owner, change))) return null;
  screen.suppression.countStopped(r.channel, 'partial');
  screen.log.info(
    { deliveryId: r.id, backend: r.backend, recipient: maskedRecipient },
    'recipients suppressed after acceptance left out of the delivery',
  );
  return { ...r, recipient, maskedRecipient, payload, suppressedRecipients };
}
