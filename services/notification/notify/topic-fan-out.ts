/**
 * `TopicFanOut`: the durable background job of a topic notification. One replica at a time holds a
 * job's lease (the store's clock: the database's `now()`); the holder counts the topic's members
 * once (users_total), then steps through it a page at a time (`notify.topic_page_size`): the page's
 * member notifications are created and the cursor moved in ONE transaction, then each member is
 * fanned out. Members created but not yet fanned out (a crash between the two) are fanned out before
 * the next page, so a job resumed by another process skips nobody, and creates nothing twice (one
 * notification per (topic notification, user); each delivery's key is derived from its
 * notification). A member whose own data fails to render gets lines skipped RENDER_FAILED; the job
 * goes on.
 */
import { InvalidArgumentError } from '../../../shared/errors';
import type { Logger } from '../../../shared/logging/logger';
import { silentLogger } from '../../../shared/logging/logger';
import { type Clock, systemClock, type Timers } from '../../../shared/runtime/clock';
import { newId } from '../../../shared/runtime/ids';
import type { User, UserDirectory } from '../users/types';
import type { FanOut } from './fan-out';
import type { CategoryConfig } from './config';
import type { FanOutResult, NewChild, NotificationStore } from './store';
import type { NotificationRecord, TopicJob } from './types';
import { LeaseLoop } from './schedule/lease-loop';

/** The cursor of a job whose pages are all done (never a directory token: `$` is not base64url). */
export const TOPIC_CURSOR_END = '$end';

/** Options of TopicFanOut. */
export interface TopicFanOutOptions {
  store: NotificationStore;
  directory: Pick<UserDirectory, 'findUsers' | 'listTopicSubscribers' | 'eraseIfDeleted'>;
  fanOut: FanOut;
  /** The category of a job's notification (the Notifier's lookup). */
  category: (name: string) => CategoryConfig;
  /** `notify.topic_page_size`. */
  pageSize: number;
  /** How long a lease lasts without renewal (renewed every page; default 30 s). */
  leaseMs?: number;
  /** How often an idle runner looks for a job (default 1 s; `wake` starts one at once). */
  pollMs?: number;
  /** Members fanned out at once, read in one query and saved in one commit (default 16). */
  concurrency?: number;
  owner?: string;
  clock?: Clock;
  timers?: Timers;
  logger?: Logger;
}

/** The runner of topic jobs in this process. */
export class TopicFanOut {
  private readonly owner: string;
  private readonly leaseMs: number;
  private readonly concurrency: number;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly loop: LeaseLoop;

  constructor(private readonly options: TopicFanOutOptions) {
    this.owner = options.owner ?? `topic-${newId()}`;
    this.leaseMs = options.leaseMs ?? 30_000;
    this.concurrency = options.concurrency ?? 16;
    this.clock = options.clock ?? systemClock;
    this.log = (options.logger ?? silentLogger()).child({ component: 'topic-fan-out' });
    this.loop = new LeaseLoop({
      step: () => this.runOnce(),
      pollMs: options.pollMs ?? 1000,
      ...(options.timers ? { timers: options.timers } : {}),
      logger: this.log,
      name: 'topic fan-out',
    });
  }

  private get stopping(): boolean {
    return this.loop.stopping;
  }

  /** Starts polling for jobs (jobs an earlier process left resume now). */
  start(): void {
    this.loop.start();
  }

  /** Runs a pass now (a topic notification was just accepted). */
  wake(): void {
    this.loop.wake();
  }

  /** Stops after the member in hand; the job's lease is given up, so another process resumes it. */
  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /** Claims one job and works it until done, lost or stopped; false when there was none. */
  async runOnce(): Promise<boolean> {
    const job = await this.options.store.claimTopicJob(this.owner, this.leaseMs);
    if (!job) return false;
    const id = job.notification.id;
    const started = this.clock.monotonic();
    try {
      const finished = await this.work(job);
      if (finished) {
        this.log.info(
          { notificationId: id, durationMs: Math.round(this.clock.monotonic() - started) },
          'topic fan-out finished',
        );
      }
    } finally {
      if (this.stopping) await this.options.store.releaseTopicJob(id, this.owner).catch(() => undefined);
    }
    return true;
  }

  /** Works a held job; true when it finished, false when the lease was lost or the runner stops. */
  private async work(job: TopicJob): Promise<boolean> {
    const { store, directory, pageSize } = this.options;
    const parent = job.notification;
    const id = parent.id;
    if (!job.counted && !(await store.setTopicTotal(id, this.owner, await this.count(job.topic))))
      return false;
    let cursor = job.cursor;
    for (;;) {
      if (this.stopping) return false;
      if (!(await store.renewTopicJob(id, this.owner, this.leaseMs))) return false;
      const pending = await store.pendingChildren(id, pageSize);
      if (pending.length > 0) {
        await this.fanOutMembers(pending, job);
        continue;
      }
      if (cursor === TOPIC_CURSOR_END) return store.finishTopicJob(id, this.owner);
      const page = await directory.listTopicSubscribers(job.topic, pageSize, cursor ?? undefined);
      const now = new Date(this.clock.now());
      const children: NewChild[] = page.userIds.map((userId) => ({
        id: newId(),
        scope: parent.scope,
        userId,
        topic: job.topic,
        parentId: id,
        category: parent.category,
        priority: parent.priority,
        idempotencyKey: null,
        requestHash: parent.requestHash,
        status: 'accepted',
        createdAt: now,
      }));
      cursor = page.nextPageToken ?? TOPIC_CURSOR_END;
      if (!(await store.addTopicPage(id, this.owner, children, children.length, cursor))) return false;
    }
  }

  /** The topic's members now (paged through once, ids only). */
  private async count(topic: string): Promise<number> {
    let total = 0;
    let token: string | undefined;
    do {
      const page = await this.options.directory.listTopicSubscribers(topic, this.options.pageSize, token);
      total += page.userIds.length;
      token = page.nextPageToken;
    } while (token !== undefined && !this.stopping);
    return total;
  }

  /**
   * Fans out `concurrency` members at once and saves each group's fan-outs in ONE commit
   * (`saveFanOuts`): the members sent but not yet saved when a process dies are at most the group in
   * flight, as with one commit per member (their deliveries are keyed, so a redo submits none twice).
   * A member that fails leaves the others of its group saved, then the error goes up (the job is
   * retried at lease expiry, the failed member still pending).
   */
  private async fanOutMembers(members: readonly NotificationRecord[], job: TopicJob): Promise<void> {
    for (let i = 0; i < members.length; i += this.concurrency) {
      const group = members.slice(i, i + this.concurrency);
      // The group's users in one read (two statements), just before the group is sent.
      const users = await this.options.directory.findUsers(group.map((m) => m.userId!));
      const settled = await Promise.allSettled(
        group.map((m) => this.fanOutMember(m, users.get(m.userId!), job)),
      );
      const done: FanOutResult[] = [];
      let failure: { reason: unknown } | undefined;
      for (const s of settled) {
        if (s.status === 'fulfilled') done.push(s.value);
        else failure ??= s;
      }
      await this.options.store.saveFanOuts(done);
      // The group was read before its writes: members a DeleteUser erased meanwhile are erased again.
      await this.options.directory.eraseIfDeleted([...users.keys()]);
      if (failure) throw failure.reason;
    }
  }

  /** One member: rendered with its own data (RENDER_FAILED lines when that fails), then sent. */
  private async fanOutMember(
    member: NotificationRecord,
    user: User | undefined,
    job: TopicJob,
  ): Promise<FanOutResult> {
    const { fanOut } = this.options;
    if (!user) {
      // Deleted since it subscribed: nothing to send, nothing to keep.
      return { id: member.id, lines: [] };
    }
    let category: CategoryConfig;
    try {
      category = this.options.category(member.category);
    } catch (err) {
      if (!(err instanceof InvalidArgumentError)) throw err;
      // The category left the config while its fan-out ran (a restart with another config): nothing
      // of it may be sent any more. The member is done with no lines, so the job finishes instead of
      // failing and being retried at every lease expiry.
      this.log.warn(
        { notificationId: member.parentId, category: member.category },
        'topic fan-out: the category is no longer configured; member left without a send',
      );
      return { id: member.id, lines: [] };
    }
    const plans = await fanOut.plan(user, category, job.request.data, job.request.overrides, 'record');
    const lines = await fanOut.send(member, user, plans, job.request.data);
    // A held line keeps the request on the member until it is released.
    return { id: member.id, lines, request: job.request };
  }
}
