/**
 * N replicas claiming from one delivery queue (issue 30, "A capacity model, measured"): the
 * simulation behind `npm run capacity -- replicas` and its small-scale jest test
 * (test/notification/delivery/replicas-sim.test.ts).
 *
 * Each replica is a DeliveryStore of its own (its own knex pool and owner, as a replica process has)
 * running the worker's loop through the public store API only: `dueBackends`, then `claim` per due
 * backend, then `completeAttempt` of every claimed record at once (a stand-in send: no network, sent
 * at once). So whatever database-queue.ts and the claim function become, this measures them.
 *
 * `claimAllOnce` tallies every claim (empty, short, full) and every completion per delivery id, and
 * `exactlyOnceProblems` says what went wrong when a delivery was claimed or completed other than
 * exactly once (the caller asserts that list is empty).
 */
import { randomUUID } from 'node:crypto';
import type { Channel } from '../../services/notification/delivery/driver';
import type { DeliveryStore, NewDelivery } from '../../services/notification/delivery/store';

/** Tuning of one simulation. */
export interface ClaimSimOptions {
  /** Most records one claim asks for (a worker's free slots for the backend). */
  claimLimit: number;
  /** Lease of a claim, in ms: long enough that no lease expires during the run. */
  leaseMs?: number;
  /** Wait between polls when a replica found nothing due but others still hold leases (ms). */
  idleMs?: number;
  /** Deliveries expected in total: a replica stops once it sees none due and all are completed. */
  expected: number;
  /** Gives up (throws) after this long, in ms (default 600,000): a stuck claim never hangs a run. */
  deadlineMs?: number;
}

/** What one replica saw. */
export interface ReplicaTally {
  owner: string;
  polls: number;
  claims: number;
  /** Claims that came back with no record. */
  emptyClaims: number;
  /** Claims that came back with fewer records than asked for (and at least one). */
  shortClaims: number;
  claimed: number;
  completed: number;
  /** completeAttempt answered null (the lease was lost). */
  lostLeases: number;
  /** The most records one claim returned. */
  largestClaim: number;
}

/** What the whole simulation saw. */
export interface ClaimSimResult {
  replicas: ReplicaTally[];
  /** Per delivery id: how many times it was claimed, and completed (completeAttempt non-null). */
  claimedTimes: Map<string, number>;
  completedTimes: Map<string, number>;
  seconds: number;
}

/** `count` deliveries of `channel` spread round-robin over `backends`, due now. */
export function backlog(
  count: number,
  backends: readonly string[],
  channel: Channel = 'push',
): NewDelivery[] {
  const createdAt = new Date();
  return Array.from({ length: count }, (_, i) => ({
    id: randomUUID(),
    channel,
    backend: backends[i % backends.length]!,
    recipient: `device-${i}`,
    maskedRecipient: `dev****${i % 10}`,
    scope: 'sim',
    idempotencyKey: null,
    contentHash: `h${i}`,
    payload: { title: 'Hi 👋', body: 'مرحبا 你好' },
    createdAt,
  }));
}

/** Writes `deliveries` through `store.createBatch` in chunks of `chunk`. */
export async function seed(
  store: DeliveryStore,
  deliveries: readonly NewDelivery[],
  chunk = 500,
): Promise<void> {
  for (let i = 0; i < deliveries.length; i += chunk) {
    await store.createBatch(deliveries.slice(i, i + chunk));
  }
}

/**
 * Runs one claim loop per store until every expected delivery is completed; never throws for a
 * double claim (it is counted: see exactlyOnceProblems).
 */
export async function claimAllOnce(
  stores: readonly DeliveryStore[],
  options: ClaimSimOptions,
): Promise<ClaimSimResult> {
  const leaseMs = options.leaseMs ?? 600_000;
  const idleMs = options.idleMs ?? 5;
  const deadlineMs = options.deadlineMs ?? 600_000;
  const claimedTimes = new Map<string, number>();
  const completedTimes = new Map<string, number>();
  let completedTotal = 0;
  const started = performance.now();

  const replica = async (store: DeliveryStore, index: number): Promise<ReplicaTally> => {
    const tally: ReplicaTally = {
      owner: `replica-${index}-${randomUUID().slice(0, 8)}`,
      polls: 0,
      claims: 0,
      emptyClaims: 0,
      shortClaims: 0,
      claimed: 0,
      completed: 0,
      lostLeases: 0,
      largestClaim: 0,
    };
    for (;;) {
      if (performance.now() - started > deadlineMs) {
        throw new Error(
          `claim simulation: ${completedTotal} of ${options.expected} completed at the deadline`,
        );
      }
      tally.polls++;
      const due = await store.dueBackends(new Date());
      if (due.length === 0) {
        if (completedTotal >= options.expected) return tally;
        // Others hold the rest under lease: wait for them (or for a lease to expire).
        await new Promise((resolve) => setTimeout(resolve, idleMs));
        continue;
      }
      for (const { channel, backend } of due) {
        const records = await store.claim({
          channel,
          backend,
          owner: tally.owner,
          now: new Date(),
          leaseMs,
          limit: options.claimLimit,
        });
        tally.claims++;
        if (records.length === 0) tally.emptyClaims++;
        else if (records.length < options.claimLimit) tally.shortClaims++;
        tally.claimed += records.length;
        tally.largestClaim = Math.max(tally.largestClaim, records.length);
        for (const r of records) claimedTimes.set(r.id, (claimedTimes.get(r.id) ?? 0) + 1);
        // The stand-in send: sent at once, all completions in flight together (group-committed).
        const outcomes = await Promise.all(
          records.map((r) => {
            const now = new Date();
            return store.completeAttempt(r.id, tally.owner, {
              attempt: {
                number: r.attempts.length + 1,
                startedAt: now,
                durationMs: 0,
                outcome: 'sent',
                backend: r.backend,
                providerReference: `ref-${r.id}`,
              },
              status: 'sent',
              nextAttemptAt: null,
              now,
            });
          }),
        );
        outcomes.forEach((done, i) => {
          if (done === null) {
            tally.lostLeases++;
            return;
          }
          const id = records[i]!.id;
          completedTimes.set(id, (completedTimes.get(id) ?? 0) + 1);
          tally.completed++;
          completedTotal++;
        });
      }
    }
  };

  const replicas = await Promise.all(stores.map(replica));
  return { replicas, claimedTimes, completedTimes, seconds: (performance.now() - started) / 1000 };
}

/** Everything that was not "each of `ids` claimed once and completed once"; empty when all was. */
export function exactlyOnceProblems(result: ClaimSimResult, ids: readonly string[]): string[] {
  const problems: string[] = [];
  const known = new Set(ids);
  for (const id of ids) {
    const claimed = result.claimedTimes.get(id) ?? 0;
    const completed = result.completedTimes.get(id) ?? 0;
    if (claimed !== 1) problems.push(`${id} claimed ${claimed} times`);
    if (completed !== 1) problems.push(`${id} completed ${completed} times`);
  }
  for (const id of result.claimedTimes.keys())
    if (!known.has(id)) problems.push(`${id} claimed but never seeded`);
  return problems;
}
