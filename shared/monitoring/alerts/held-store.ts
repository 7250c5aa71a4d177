/**
 * HeldAlertStore: where the tier-aware dispatcher keeps the P1 alerts held outside business hours and
 * the P2 alerts waiting for the digest, until a batch of them is sent.
 *
 * The protocol is hold, claim, complete: `hold` keeps a record (at the tier's bound the oldest
 * unclaimed record is dropped and counted); `claim` leases the unclaimed records of a tier (and those
 * whose lease ran out) to one owner and takes the tier's dropped count with them; the owner sends the
 * batch (renewing the lease while it is on its way) and `complete` deletes what it claimed. An owner that dies between claim and complete leaves
 * its records leased: once the lease runs out the next claim takes them again, so a held alert is sent
 * at least once (twice if the owner died after the send and before the delete).
 *
 * The same rows serve as the outbox of alerts sent at once (`OUTBOX`): with a durable store the
 * dispatcher keeps such an alert leased to itself (`holdClaimed`) until every channel is through with
 * it, then completes it; a dispatcher that dies meanwhile leaves the row, and once its lease runs out
 * another dispatcher (or the same service restarted) claims and sends it. One mechanism, hold/claim/
 * complete with leases, for everything the dispatcher must not lose.
 *
 * The in-memory store (the default) lives and dies with its process; a service with a database gives
 * the dispatcher a durable one (the monitor's services/monitor/alerts/held-database-store.ts), shared
 * by the replicas on that database.
 */
import { randomUUID } from 'node:crypto';
import { type Clock, systemClock } from '../../runtime/clock';
import type { AlertRecord } from './channels';
import { AlertTier } from './tiers';

/**
 * The queue of alerts sent at once (P0, P1 within business hours) whose channels are not through yet:
 * kept by a durable store so a crash in the middle of a send loses none (see the file comment).
 */
export const OUTBOX = 'OUTBOX' as const;

/**
 * The queues of kept alerts: P1 outside business hours, P2 until the digest, and the outbox of alerts
 * being sent at once (each keeps its own tier in its record).
 */
export type HeldTier = DeferredTier | typeof OUTBOX;

/** The tiers whose alerts wait: P1 outside business hours, P2 until the digest. */
export type DeferredTier = typeof AlertTier.P1_BUSINESS_HOURS | typeof AlertTier.P2_DIGEST;

/** What one claim took: the records (oldest first) and the alerts of the tier dropped since the last claim. */
export interface HeldClaim {
  tier: HeldTier;
  owner: string;
  /** Store-given identities of the claimed records, for `complete`. */
  ids: readonly string[];
  alerts: AlertRecord[];
  dropped: number;
}

/** See the file comment. */
export interface HeldAlertStore {
  /** True when held records survive the process (the dispatcher then keeps them at shutdown). */
  readonly durable: boolean;
  /**
   * Keeps `record` until it is claimed and completed. With `bound` unclaimed records of the tier
   * already kept, the oldest is dropped and counted. Resolves once the record is kept.
   */
  hold(tier: HeldTier, record: AlertRecord, bound: number): Promise<void>;
  /**
   * Keeps `record` already leased to `owner` for `leaseMs` (an alert about to be sent at once): a
   * claim of that one record, for `renew` and `complete`. Never dropped at a bound: its sender holds
   * it, and what dead senders leave is bounded by what they had on its way.
   */
  holdClaimed(tier: HeldTier, record: AlertRecord, owner: string, leaseMs: number): Promise<HeldClaim>;
  /**
   * Leases to `owner` for `leaseMs` at most `limit` records of the tier that nobody holds a live
   * lease on, oldest first, with the tier's dropped count (reset to 0).
   */
  claim(tier: HeldTier, owner: string, leaseMs: number, limit: number): Promise<HeldClaim>;
  /** Extends the lease of a claim's records still leased to its owner to `leaseMs` from now. */
  renew(claim: HeldClaim, leaseMs: number): Promise<void>;
  /** Deletes the records of a claim (they were sent); records whose lease another owner took stay. */
  complete(claim: HeldClaim): Promise<void>;
  /** Records of the tier kept (claimed or not). */
  count(tier: HeldTier): Promise<number>;
  /**
   * The digest's turn: true (and the turn is recorded) when no owner flushed the tier within
   * `intervalMs`, so replicas sharing the store send one digest per interval between them.
   */
  takeFlushTurn(tier: HeldTier, intervalMs: number): Promise<boolean>;
}

interface MemoryHeld {
  id: string;
  record: AlertRecord;
  owner: string;
  leaseUntil: number;
}

/**
 * The store of one process: what today's dispatcher kept in its drop-oldest buffers, lost with the
 * process. Leases are measured on `clock`. Every flush turn is granted: one process has one digest
 * timer, and nobody else shares the records.
 */
export class MemoryHeldAlertStore implements HeldAlertStore {
  readonly durable = false;
  private readonly held: Record<HeldTier, MemoryHeld[]> = {
    [AlertTier.P1_BUSINESS_HOURS]: [],
    [AlertTier.P2_DIGEST]: [],
    [OUTBOX]: [],
  };
  private readonly dropped: Record<HeldTier, number> = {
    [AlertTier.P1_BUSINESS_HOURS]: 0,
    [AlertTier.P2_DIGEST]: 0,
    [OUTBOX]: 0,
  };
  private nextId = 1;

  constructor(private readonly clock: Clock = systemClock) {}

  private free(h: MemoryHeld, now: number): boolean {
    return h.owner === '' || h.leaseUntil <= now;
  }

  async hold(tier: HeldTier, record: AlertRecord, bound: number): Promise<void> {
    const list = this.held[tier];
    const now = this.clock.now();
    let free = list.filter((h) => this.free(h, now)).length;
    while (free >= bound) {
      const oldest = list.findIndex((h) => this.free(h, now));
      list.splice(oldest, 1);
      this.dropped[tier]++;
      free--;
    }
    list.push({ id: String(this.nextId++), record, owner: '', leaseUntil: 0 });
  }

  async holdClaimed(tier: HeldTier, record: AlertRecord, owner: string, leaseMs: number): Promise<HeldClaim> {
    const id = String(this.nextId++);
    this.held[tier].push({ id, record, owner, leaseUntil: this.clock.now() + leaseMs });
    return { tier, owner, ids: [id], alerts: [record], dropped: 0 };
  }

  async claim(tier: HeldTier, owner: string, leaseMs: number, limit: number): Promise<HeldClaim> {
    const now = this.clock.now();
    const taken = this.held[tier].filter((h) => this.free(h, now)).slice(0, limit);
    for (const h of taken) {
      h.owner = owner;
      h.leaseUntil = now + leaseMs;
    }
    const dropped = this.dropped[tier];
    this.dropped[tier] = 0;
    return { tier, owner, ids: taken.map((h) => h.id), alerts: taken.map((h) => h.record), dropped };
  }

  async renew(claim: HeldClaim, leaseMs: number): Promise<void> {
    const ids = new Set(claim.ids);
    const until = this.clock.now() + leaseMs;
    for (const h of this.held[claim.tier]) if (ids.has(h.id) && h.owner === claim.owner) h.leaseUntil = until;
  }

  async complete(claim: HeldClaim): Promise<void> {
    const ids = new Set(claim.ids);
    const list = this.held[claim.tier];
    this.held[claim.tier] = list.filter((h) => !(ids.has(h.id) && h.owner === claim.owner));
  }

  async count(tier: HeldTier): Promise<number> {
    return this.held[tier].length;
  }

  async takeFlushTurn(): Promise<boolean> {
    return true;
  }
}

/** A random owner name for a dispatcher that was given none. */
export function randomHeldOwner(): string {
  return `dispatcher-${randomUUID()}`;
}
