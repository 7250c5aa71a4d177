/**
 * MemoryCapLedger: the `memory` backend of the frequency caps (tests and throwaway runs; one process).
 * Bounded: per user and channel only the takes still inside the channel's longest window, at most
 * its largest limit of them; at most `maxUsers` users (a new user beyond it forgets the user least
 * recently taken for; when that user still had takes inside a window their counts start again: the
 * bound can let that user receive more than the cap, never fewer messages than allowed).
 */
import type { Logger } from '../../../../shared/logging/logger';
import { silentLogger } from '../../../../shared/logging/logger';
import { type Clock, systemClock } from '../../../../shared/runtime/clock';
import type { CapConfig } from '../config';
import type { CapDecision, CapLedger, TimedChannel } from '../timing';
import { capsByChannel, decide, longestWindow, takesNeeded } from './rules';

/** Default bound of users the memory ledger keeps. */
export const DEFAULT_CAP_MEMORY_MAX_USERS = 100_000;

/** Options of MemoryCapLedger. */
export interface MemoryCapLedgerOptions {
  caps: readonly CapConfig[];
  clock?: Clock;
  /** Most users kept (default {@link DEFAULT_CAP_MEMORY_MAX_USERS}). */
  maxUsers?: number;
  logger?: Logger;
}

/** The in-memory CapLedger. */
export class MemoryCapLedger implements CapLedger {
  private readonly caps: Map<TimedChannel, CapConfig[]>;
  private readonly clock: Clock;
  private readonly maxUsers: number;
  private readonly log: Logger;
  /** user -> channel -> take times (ms), newest first; Map order: least recently taken for first. */
  private readonly users = new Map<string, Map<TimedChannel, number[]>>();

  constructor(options: MemoryCapLedgerOptions) {
    this.caps = capsByChannel(options.caps);
    this.clock = options.clock ?? systemClock;
    this.maxUsers = options.maxUsers ?? DEFAULT_CAP_MEMORY_MAX_USERS;
    this.log = (options.logger ?? silentLogger()).child({ component: 'cap-ledger' });
  }

  async take(userId: string, channel: TimedChannel): Promise<CapDecision> {
    const caps = this.caps.get(channel);
    if (!caps) return { taken: true };
    const now = this.clock.now();
    const channels = this.users.get(userId);
    const kept = this.recent(channels?.get(channel) ?? [], caps, now);
    const decision = decide(
      caps,
      kept.map((t) => t * 1000),
      now * 1000,
    );
    if (decision.taken) kept.unshift(now);
    const bounded = kept.slice(0, takesNeeded(caps));
    if (channels) {
      // Moves the user to the end: the most recently taken for.
      this.users.delete(userId);
      if (bounded.length > 0) channels.set(channel, bounded);
      else channels.delete(channel);
      if (channels.size > 0) this.users.set(userId, channels);
    } else if (bounded.length > 0) {
      this.makeRoom(now);
      this.users.set(userId, new Map([[channel, bounded]]));
    }
    return decision;
  }

  async eraseUser(userId: string): Promise<void> {
    this.users.delete(userId);
  }

  /** How many users and takes the ledger holds (its bound, for tests and metrics). */
  size(): { users: number; takes: number } {
    let takes = 0;
    for (const channels of this.users.values()) for (const t of channels.values()) takes += t.length;
    return { users: this.users.size, takes };
  }

  /** The takes still inside the channel's longest window at `now`, newest first. */
  private recent(takes: readonly number[], caps: readonly CapConfig[], now: number): number[] {
    const oldest = now - longestWindow(caps) * 1000;
    return takes.filter((t) => t > oldest);
  }

  /**
   * Keeps the bound before a new user is added: forgets the user least recently taken for (logged
   * when that user still had takes inside a window; one whose takes all expired loses nothing).
   * O(1): never a sweep of every user.
   */
  private makeRoom(now: number): void {
    for (const [userId, channels] of this.users) {
      if (this.users.size < this.maxUsers) return;
      const live = [...channels].some(
        ([channel, takes]) => this.recent(takes, this.caps.get(channel) ?? [], now).length > 0,
      );
      this.users.delete(userId);
      if (live) {
        this.log.warn(
          { maxUsers: this.maxUsers },
          'cap ledger full: the user least recently taken for was forgotten (memory backend)',
        );
      }
    }
  }
}
