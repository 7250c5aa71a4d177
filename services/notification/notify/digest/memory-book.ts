/**
 * The DigestBook in memory (tests and throwaway runs: `delivery.store_backend: memory`). Each method
 * runs to its end without awaiting, so concurrent calls in the process are atomic; the rules are the
 * database book's (see README.md, "Digests"). Finished digests are kept for `get` up to
 * {@link MEMORY_FINISHED_DIGESTS}, oldest dropped first.
 */
import { type Clock, systemClock } from '../../../../shared/runtime/clock';
import { newId } from '../../../../shared/runtime/ids';
import { CHANNELS } from '../../delivery/driver';
import type { CategoryConfig } from '../config';
import type { DigestEvent, DigestState, DueDigest, TimedChannel } from '../timing';
import type { DigestStore } from './store';
import { DigestRules, eventData, isFull, MEMORY_FINISHED_DIGESTS, storedKey } from './rules';
import { placeEvent } from './window';

interface StoredEvent {
  notificationId: string;
  channel: string;
  occurredAt: number;
  json: string;
  bytes: number;
  seq: number;
}

interface Digest {
  id: string;
  scope: string;
  userId: string;
  category: string;
  channel: TimedChannel;
  key: string;
  keyId: string;
  windowStart: number;
  windowEnd: number;
  flushAt: number;
  status: DigestState['status'];
  /** Takes events whose time falls in its window (open, not full, not deferred). */
  accepting: boolean;
  events: StoredEvent[];
  count: number;
  bytes: number;
  leaseOwner: string | null;
  leaseExpiresAt: number;
  messageId: string | null;
  error: string | null;
  /** When it was sent or cancelled (the clock's ms). */
  finishedAt: number;
}

const eventId = (notificationId: string, channel: string) => `${notificationId}\u0000${channel}`;

/** The DigestBook in process memory. */
export class InMemoryDigestBook implements DigestStore {
  private readonly rules: DigestRules;
  private readonly clock: Clock;
  private readonly digests = new Map<string, Digest>();
  /** Open digests by key. */
  private readonly openByKey = new Map<string, Set<string>>();
  /** (notification, channel) -> digest id. */
  private readonly events = new Map<string, string>();
  /** Finished digests, oldest first (bounded). */
  private readonly finished = new Set<string>();
  private seq = 0;

  constructor(options: { categories: readonly CategoryConfig[]; clock?: Clock }) {
    this.rules = new DigestRules(options.categories);
    this.clock = options.clock ?? systemClock;
  }

  async add(event: DigestEvent): Promise<{ digestId: string; flushAt: Date }> {
    const config = this.rules.configOf(event.category, event.channel);
    const { json, bytes } = eventData(event);
    const existing = this.events.get(eventId(event.notificationId, event.channel));
    if (existing !== undefined) {
      const d = this.digests.get(existing);
      if (d) return { digestId: d.id, flushAt: new Date(d.flushAt) };
    }
    const key = storedKey(event.key);
    const keyId = JSON.stringify([event.scope, event.userId, event.category, event.channel, key]);
    const now = this.clock.now();
    const open = [...(this.openByKey.get(keyId) ?? [])]
      .map((id) => this.digests.get(id)!)
      .filter((d) => d.accepting)
      .map((d) => ({ id: d.id, start: new Date(d.windowStart), end: new Date(d.windowEnd) }));
    const placed = placeEvent(event.occurredAt, new Date(now), open, config, event.timeZone);
    let digest: Digest;
    if ('join' in placed) {
      digest = this.digests.get(placed.join)!;
    } else {
      digest = {
        id: newId(),
        scope: event.scope,
        userId: event.userId,
        category: event.category,
        channel: event.channel,
        key,
        keyId,
        windowStart: placed.open.start.getTime(),
        windowEnd: placed.open.end.getTime(),
        flushAt: placed.open.end.getTime(),
        status: 'open',
        accepting: true,
        events: [],
        count: 0,
        bytes: 0,
        leaseOwner: null,
        leaseExpiresAt: 0,
        messageId: null,
        error: null,
        finishedAt: 0,
      };
      this.digests.set(digest.id, digest);
      let set = this.openByKey.get(keyId);
      if (!set) this.openByKey.set(keyId, (set = new Set()));
      set.add(digest.id);
    }
    digest.events.push({
      notificationId: event.notificationId,
      channel: event.channel,
      occurredAt: event.occurredAt.getTime(),
      json,
      bytes,
      seq: this.seq++,
    });
    digest.count += 1;
    digest.bytes += bytes;
    this.events.set(eventId(event.notificationId, event.channel), digest.id);
    if (isFull(digest.count, digest.bytes, config.max_count)) {
      digest.accepting = false;
      digest.flushAt = Math.min(digest.flushAt, now);
    }
    return { digestId: digest.id, flushAt: new Date(digest.flushAt) };
  }

  async claimDue(owner: string, leaseMs: number, limit: number): Promise<DueDigest[]> {
    const now = this.clock.now();
    const due: Digest[] = [];
    for (const set of this.openByKey.values()) {
      for (const id of set) {
        const d = this.digests.get(id)!;
        if (
          (d.status === 'open' && d.flushAt <= now) ||
          (d.status === 'sending' && d.leaseExpiresAt <= now)
        ) {
          due.push(d);
        }
      }
    }
    due.sort((a, b) => a.flushAt - b.flushAt);
    return due.slice(0, Math.max(0, limit)).map((d) => {
      d.status = 'sending';
      d.accepting = false;
      d.leaseOwner = owner;
      d.leaseExpiresAt = now + leaseMs;
      return {
        id: d.id,
        scope: d.scope,
        userId: d.userId,
        category: d.category,
        channel: d.channel,
        key: d.key,
        windowStart: new Date(d.windowStart),
        events: [...d.events]
          .sort((a, b) => a.occurredAt - b.occurredAt || a.seq - b.seq)
          .map((e) => ({
            notificationId: e.notificationId,
            occurredAt: new Date(e.occurredAt),
            data: JSON.parse(e.json) as Record<string, unknown>,
          })),
      };
    });
  }

  private held(digestId: string, owner: string): Digest | undefined {
    const d = this.digests.get(digestId);
    return d && d.status === 'sending' && d.leaseOwner === owner ? d : undefined;
  }

  async finish(
    digestId: string,
    owner: string,
    messageId: string | null,
    error: string | null,
  ): Promise<boolean> {
    const d = this.held(digestId, owner);
    if (!d) return false;
    d.status = 'sent';
    d.messageId = messageId;
    d.error = error;
    this.close(d);
    return true;
  }

  async defer(digestId: string, owner: string, until: Date): Promise<boolean> {
    const d = this.held(digestId, owner);
    if (!d) return false;
    d.status = 'open';
    d.flushAt = until.getTime();
    d.leaseOwner = null;
    d.leaseExpiresAt = 0;
    return true;
  }

  async get(digestId: string): Promise<DigestState | null> {
    const d = this.digests.get(digestId);
    if (!d) return null;
    return {
      id: d.id,
      status: d.status,
      flushAt: new Date(d.flushAt),
      count: d.count,
      messageId: d.messageId,
      error: d.error,
    };
  }

  async removeNotification(notificationId: string): Promise<number> {
    let removed = 0;
    for (const channel of CHANNELS) {
      const id = this.events.get(eventId(notificationId, channel));
      const d = id === undefined ? undefined : this.digests.get(id);
      if (!d || d.status !== 'open') continue;
      const i = d.events.findIndex((e) => e.notificationId === notificationId && e.channel === channel);
      if (i < 0) continue;
      const [e] = d.events.splice(i, 1);
      d.count -= 1;
      d.bytes -= e!.bytes;
      this.events.delete(eventId(notificationId, channel));
      removed += 1;
      if (d.count === 0) {
        d.status = 'cancelled';
        this.close(d);
      }
    }
    return removed;
  }

  async eraseUser(userId: string): Promise<void> {
    for (const d of [...this.digests.values()]) {
      if (d.userId === userId) this.drop(d);
    }
  }

  async purgeFinished(before: Date, limit: number): Promise<number> {
    let purged = 0;
    // The finished set is in finishing order, so the oldest come first.
    for (const id of [...this.finished]) {
      const d = this.digests.get(id)!;
      if (purged >= limit || d.finishedAt >= before.getTime()) break;
      this.drop(d);
      purged += 1;
    }
    return purged;
  }

  /** A finished digest: no longer open, kept for `get` within the bound. */
  private close(d: Digest): void {
    d.finishedAt = this.clock.now();
    d.accepting = false;
    d.leaseOwner = null;
    d.leaseExpiresAt = 0;
    this.openByKey.get(d.keyId)?.delete(d.id);
    if (this.openByKey.get(d.keyId)?.size === 0) this.openByKey.delete(d.keyId);
    this.finished.add(d.id);
    while (this.finished.size > MEMORY_FINISHED_DIGESTS) {
      const oldest = this.finished.values().next().value as string;
      this.drop(this.digests.get(oldest)!);
    }
  }

  private drop(d: Digest): void {
    for (const e of d.events) this.events.delete(eventId(e.notificationId, e.channel));
    this.openByKey.get(d.keyId)?.delete(d.id);
    if (this.openByKey.get(d.keyId)?.size === 0) this.openByKey.delete(d.keyId);
    this.finished.delete(d.id);
    this.digests.delete(d.id);
  }
}
