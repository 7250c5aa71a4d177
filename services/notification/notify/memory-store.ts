/**
 * The in-memory NotificationStore (tests and throwaway runs): the same behaviour as the database
 * store, in one process. Leases use the given clock.
 */
import { type Clock, systemClock } from '../../../shared/runtime/clock';
import type {
  FanOutResult,
  NewChild,
  NotificationFilter,
  NotificationPage,
  NotificationStore,
} from './store';
import type {
  ChannelLine,
  DueNotification,
  NewNotification,
  NotificationPageKey,
  NotificationRecord,
  TopicJob,
  TopicRequest,
} from './types';

interface MemoryJob {
  id: string;
  topic: string;
  request: TopicRequest | null;
  cursor: string | null;
  counted: boolean;
  owner: string | null;
  leaseExpiresAt: number;
  finished: boolean;
  seq: number;
  /** Not claimed before (a scheduled topic notification's send time). */
  notBefore: number;
}

/** A user notification's due work: when, what it needs, who holds it. */
interface MemoryDue {
  dueAt: number;
  request: TopicRequest;
  owner: string | null;
  leaseExpiresAt: number;
}

/** The earliest held line's release, or null. */
function earliestHold(lines: readonly ChannelLine[]): number | null {
  let min: number | null = null;
  for (const l of lines) {
    if (l.heldUntil) min = min === null ? l.heldUntil.getTime() : Math.min(min, l.heldUntil.getTime());
  }
  return min;
}

function copy(r: NotificationRecord): NotificationRecord {
  return { ...r, channels: r.channels.map((l) => ({ ...l })) };
}

/** A line as stored (every optional field present), as the database store returns it. */
function fullLine(l: ChannelLine): ChannelLine {
  return {
    ...l,
    heldUntil: l.heldUntil ?? null,
    holdReason: l.holdReason ?? null,
    throttledBy: l.throttledBy ?? null,
    digestId: l.digestId ?? null,
  };
}

/** Newest first by (createdAt, id), as the database orders. */
function newerFirst(a: NotificationRecord, b: NotificationRecord): number {
  const t = b.createdAt.getTime() - a.createdAt.getTime();
  if (t !== 0) return t;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/** The in-memory NotificationStore. */
export class InMemoryNotificationStore implements NotificationStore {
  private readonly records = new Map<string, NotificationRecord>();
  /** `${scope}\n${key}` -> id. */
  private readonly keys = new Map<string, string>();
  /** `${parentId}\n${userId}` -> id. */
  private readonly children = new Map<string, string>();
  private readonly jobs = new Map<string, MemoryJob>();
  /** Notification id -> its due work (scheduled, or held lines). */
  private readonly due = new Map<string, MemoryDue>();
  private seq = 0;

  constructor(private readonly clock: Clock = systemClock) {}

  async create(
    n: NewNotification,
    request?: TopicRequest,
  ): Promise<{ record: NotificationRecord; created: boolean }> {
    return this.insert(n, request);
  }

  private insert(
    n: NewNotification,
    request?: TopicRequest,
  ): { record: NotificationRecord; created: boolean } {
    if (n.idempotencyKey !== null) {
      const id = this.keys.get(`${n.scope}\n${n.idempotencyKey}`);
      if (id !== undefined) return { record: copy(this.records.get(id)!), created: false };
    }
    if (n.parentId !== null && n.userId !== null) {
      const id = this.children.get(`${n.parentId}\n${n.userId}`);
      if (id !== undefined) return { record: copy(this.records.get(id)!), created: false };
    }
    const record: NotificationRecord = {
      ...n,
      sendAt: n.sendAt ?? null,
      channels: [],
      usersTotal: 0,
      usersDone: 0,
      updatedAt: n.createdAt,
    };
    this.records.set(n.id, record);
    if (n.idempotencyKey !== null) this.keys.set(`${n.scope}\n${n.idempotencyKey}`, n.id);
    if (n.parentId !== null && n.userId !== null) this.children.set(`${n.parentId}\n${n.userId}`, n.id);
    if (n.topic !== null && n.parentId === null) {
      this.jobs.set(n.id, {
        id: n.id,
        topic: n.topic,
        request: request ?? { data: {}, overrides: [] },
        cursor: null,
        counted: false,
        owner: null,
        leaseExpiresAt: 0,
        finished: false,
        seq: ++this.seq,
        notBefore: n.sendAt?.getTime() ?? 0,
      });
    } else if (n.status === 'scheduled' && n.sendAt) {
      this.due.set(n.id, {
        dueAt: n.sendAt.getTime(),
        request: structuredClone(request ?? { data: {}, overrides: [] }),
        owner: null,
        leaseExpiresAt: 0,
      });
    }
    return { record: copy(record), created: true };
  }

  async findByKey(scope: string, idempotencyKey: string): Promise<NotificationRecord | null> {
    const id = this.keys.get(`${scope}\n${idempotencyKey}`);
    return id === undefined ? null : copy(this.records.get(id)!);
  }

  async get(id: string): Promise<NotificationRecord | null> {
    const r = this.records.get(id);
    return r ? copy(r) : null;
  }

  async list(
    scope: string,
    userId: string,
    limit: number,
    after?: NotificationPageKey,
  ): Promise<NotificationPage> {
    return this.page((r) => r.scope === scope && r.userId === userId, limit, after);
  }

  async listAll(
    filter: NotificationFilter,
    limit: number,
    after?: NotificationPageKey,
  ): Promise<NotificationPage> {
    return this.page(
      (r) =>
        (filter.userId === undefined || r.userId === filter.userId) &&
        (filter.category === undefined || r.category === filter.category) &&
        (filter.status === undefined || r.status === filter.status),
      limit,
      after,
    );
  }

  /** The records `matching`, newest first, after `after`, at most `limit`, with the next page's key. */
  private page(
    matching: (r: NotificationRecord) => boolean,
    limit: number,
    after?: NotificationPageKey,
  ): NotificationPage {
    const all = [...this.records.values()]
      .filter(matching)
      .filter((r) => {
        if (!after) return true;
        const t = r.createdAt.getTime() - Date.parse(after.createdAt);
        return t < 0 || (t === 0 && r.id < after.id);
      })
      .sort(newerFirst);
    const records = all.slice(0, limit).map(copy);
    const last = records[records.length - 1];
    return {
      records,
      nextKey: all.length > limit && last ? { createdAt: last.createdAt.toISOString(), id: last.id } : null,
    };
  }

  async findByMessageId(messageId: string): Promise<NotificationRecord | null> {
    for (const r of this.records.values()) {
      if (r.channels.some((l) => l.messageId === messageId)) return copy(r);
    }
    return null;
  }

  async saveFanOut(id: string, lines: readonly ChannelLine[], request?: TopicRequest): Promise<void> {
    await this.saveFanOuts([{ id, lines, request }]);
  }

  async saveFanOuts(entries: readonly FanOutResult[]): Promise<void> {
    for (const e of entries) {
      const r = this.records.get(e.id);
      if (r) this.writeLines(r, e.lines, e.request ?? { data: {}, overrides: [] });
    }
  }

  /** Lines saved, fanned out; due at the earliest held line (the request kept), or done. */
  private writeLines(r: NotificationRecord, lines: readonly ChannelLine[], request: TopicRequest): void {
    r.channels = lines.map(fullLine);
    r.status = 'fanned_out';
    r.updatedAt = new Date(this.clock.now());
    const dueAt = earliestHold(lines);
    if (dueAt === null) this.due.delete(r.id);
    else this.due.set(r.id, { dueAt, request: structuredClone(request), owner: null, leaseExpiresAt: 0 });
  }

  async claimDue(owner: string, leaseMs: number, limit: number): Promise<DueNotification[]> {
    const now = this.clock.now();
    const ready = [...this.due.entries()]
      .filter(([, d]) => d.dueAt <= now && (d.owner === null || d.leaseExpiresAt <= now))
      .sort((a, b) => a[1].dueAt - b[1].dueAt)
      .slice(0, limit);
    return ready.map(([id, d]) => {
      d.owner = owner;
      d.leaseExpiresAt = now + leaseMs;
      const record = this.records.get(id)!;
      const kind = record.status === 'fanned_out' ? 'release' : 'send';
      if (kind === 'send') record.status = 'fanning_out';
      record.updatedAt = new Date(now);
      return { kind, notification: copy(record), request: structuredClone(d.request) };
    });
  }

  /** The due work when `owner` holds its live lease. */
  private heldDue(id: string, owner: string): MemoryDue | undefined {
    const d = this.due.get(id);
    if (!d || d.owner !== owner || d.leaseExpiresAt <= this.clock.now()) return undefined;
    return d;
  }

  async finishDue(id: string, owner: string, lines: readonly ChannelLine[]): Promise<boolean> {
    const d = this.heldDue(id, owner);
    const r = this.records.get(id);
    if (!d || !r) return false;
    this.writeLines(r, lines, d.request);
    return true;
  }

  async releaseDue(id: string, owner: string): Promise<void> {
    const d = this.heldDue(id, owner);
    if (d) d.owner = null;
  }

  async cancel(
    id: string,
    digestIds: readonly string[],
  ): Promise<{ record: NotificationRecord; cancelled: number; going: boolean } | null> {
    const r = this.records.get(id);
    if (!r) return null;
    const now = this.clock.now();
    const d = this.due.get(id);
    // A runner holding it under a live lease: it is going, nothing is taken back.
    if (d && d.owner !== null && d.leaseExpiresAt > now)
      return { record: copy(r), cancelled: 0, going: true };
    let cancelled = 0;
    if (r.status === 'scheduled') {
      r.status = 'cancelled';
      cancelled = 1;
    } else {
      r.channels = r.channels.map((l) => {
        const held = !!l.heldUntil;
        const digested =
          !!l.digestId && digestIds.includes(l.digestId) && l.messageId === null && l.skipped === null;
        if (!held && !digested) return l;
        cancelled++;
        return { ...l, skipped: 'cancelled', heldUntil: null, holdReason: null };
      });
    }
    if (cancelled > 0) {
      this.due.delete(id);
      r.updatedAt = new Date(now);
    }
    return { record: copy(r), cancelled, going: false };
  }

  async purgeBefore(before: Date, limit: number): Promise<number> {
    const old = [...this.records.values()]
      .filter(
        (r) =>
          r.createdAt < before &&
          !this.due.has(r.id) &&
          !(r.topic !== null && r.parentId === null && r.status !== 'fanned_out' && r.status !== 'cancelled'),
      )
      .sort((a, b) => -newerFirst(a, b))
      .slice(0, limit);
    for (const r of old) this.remove(r);
    // A topic notification's members go with it.
    const gone = new Set(old.map((r) => r.id));
    for (const r of [...this.records.values()])
      if (r.parentId !== null && gone.has(r.parentId)) this.remove(r);
    return old.length;
  }

  private remove(r: NotificationRecord): void {
    this.records.delete(r.id);
    this.jobs.delete(r.id);
    this.due.delete(r.id);
    if (r.idempotencyKey !== null) this.keys.delete(`${r.scope}\n${r.idempotencyKey}`);
    if (r.parentId !== null && r.userId !== null) this.children.delete(`${r.parentId}\n${r.userId}`);
  }

  async eraseUser(userId: string): Promise<number> {
    let n = 0;
    for (const r of [...this.records.values()]) {
      if (r.userId !== userId) continue;
      this.records.delete(r.id);
      this.due.delete(r.id);
      if (r.idempotencyKey !== null) this.keys.delete(`${r.scope}\n${r.idempotencyKey}`);
      if (r.parentId !== null) this.children.delete(`${r.parentId}\n${userId}`);
      n++;
    }
    return n;
  }

  async claimTopicJob(owner: string, leaseMs: number): Promise<TopicJob | null> {
    const now = this.clock.now();
    const ready = [...this.jobs.values()]
      .filter((j) => !j.finished && j.notBefore <= now && (j.owner === null || j.leaseExpiresAt <= now))
      .sort((a, b) => a.seq - b.seq);
    const job = ready.find((j) => {
      if (this.records.get(j.id)!.status !== 'cancelled') return true;
      // Cancelled while scheduled: the job ends without a page.
      j.finished = true;
      j.request = null;
      return false;
    });
    if (!job) return null;
    job.owner = owner;
    job.leaseExpiresAt = now + leaseMs;
    const record = this.records.get(job.id)!;
    record.status = 'fanning_out';
    record.updatedAt = new Date(now);
    return {
      notification: copy(record),
      topic: job.topic,
      request: structuredClone(job.request ?? { data: {}, overrides: [] }),
      cursor: job.cursor,
      counted: job.counted,
    };
  }

  /** The job when `owner` holds its live lease. */
  private held(id: string, owner: string): MemoryJob | undefined {
    const job = this.jobs.get(id);
    if (!job || job.finished || job.owner !== owner || job.leaseExpiresAt <= this.clock.now())
      return undefined;
    return job;
  }

  async renewTopicJob(id: string, owner: string, leaseMs: number): Promise<boolean> {
    const job = this.held(id, owner);
    if (!job) return false;
    job.leaseExpiresAt = this.clock.now() + leaseMs;
    return true;
  }

  async setTopicTotal(id: string, owner: string, total: number): Promise<boolean> {
    const job = this.held(id, owner);
    if (!job) return false;
    job.counted = true;
    this.records.get(id)!.usersTotal = total;
    return true;
  }

  async addTopicPage(
    id: string,
    owner: string,
    children: readonly NewChild[],
    done: number,
    cursor: string | null,
  ): Promise<boolean> {
    const job = this.held(id, owner);
    if (!job) return false;
    for (const child of children) this.insert(child);
    job.cursor = cursor;
    const record = this.records.get(id)!;
    record.usersDone += done;
    record.updatedAt = new Date(this.clock.now());
    return true;
  }

  async pendingChildren(parentId: string, limit: number): Promise<NotificationRecord[]> {
    return [...this.records.values()]
      .filter((r) => r.parentId === parentId && r.status === 'accepted')
      .sort((a, b) => -newerFirst(a, b))
      .slice(0, limit)
      .map(copy);
  }

  async releaseTopicJob(id: string, owner: string): Promise<void> {
    const job = this.held(id, owner);
    if (job) job.owner = null;
  }

  async finishTopicJob(id: string, owner: string): Promise<boolean> {
    const job = this.held(id, owner);
    if (!job) return false;
    job.finished = true;
    job.request = null;
    job.owner = null;
    const record = this.records.get(id)!;
    record.status = 'fanned_out';
    record.updatedAt = new Date(this.clock.now());
    return true;
  }
}
