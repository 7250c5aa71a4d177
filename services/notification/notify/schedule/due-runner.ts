/**
 * `DueRunner`: the ONE runner of the notify area's due work, one per process. Each step claims, on
 * the store's clock (the database's `now()`, `FOR UPDATE SKIP LOCKED`, a lease per item), a batch of
 * due user notifications (scheduled ones now due, and held lines whose `held_until` passed) and a
 * batch of due digests (`DigestBook.claimDue`), and works them (`Notifier.runDue`,
 * `Notifier.sendDigest`) a few at a time. Each item is taken by one replica; a crashed replica's
 * leases expire and another takes its items; a stopping runner finishes the batch it holds.
 * Scheduled TOPIC notifications are started by the topic runner, whose claim waits for `send_at`.
 */
import type { Logger } from '../../../../shared/logging/logger';
import { silentLogger } from '../../../../shared/logging/logger';
import type { Timers } from '../../../../shared/runtime/clock';
import { newId } from '../../../../shared/runtime/ids';
import type { NotificationStore } from '../store';
import type { DigestBook, DueDigest } from '../timing';
import type { DueNotification } from '../types';
import { LeaseLoop } from './lease-loop';

/** What the runner works with. */
export interface DueRunnerOptions {
  store: Pick<NotificationStore, 'claimDue' | 'releaseDue'>;
  /** The Notifier's handlers of one item. */
  work: {
    runDue(due: DueNotification, owner: string): Promise<void>;
    sendDigest(digest: DueDigest, owner: string): Promise<void>;
  };
  /** The open digests (absent: no digests). */
  digests?: Pick<DigestBook, 'claimDue'>;
  /** Lease of a claimed item (default 60 s: a batch is worked well within it). */
  leaseMs?: number;
  /** How often an idle runner looks (default 1 s). */
  pollMs?: number;
  /** Items claimed per step (default 100). */
  batch?: number;
  /** Items worked at once (default 16). */
  concurrency?: number;
  owner?: string;
  timers?: Timers;
  logger?: Logger;
}

/** The runner of due work in this process. */
export class DueRunner {
  readonly owner: string;
  private readonly leaseMs: number;
  private readonly batch: number;
  private readonly concurrency: number;
  private readonly log: Logger;
  private readonly loop: LeaseLoop;

  constructor(private readonly options: DueRunnerOptions) {
    this.owner = options.owner ?? `due-${newId()}`;
    this.leaseMs = options.leaseMs ?? 60_000;
    this.batch = options.batch ?? 100;
    this.concurrency = options.concurrency ?? 16;
    this.log = (options.logger ?? silentLogger()).child({ component: 'notify-due-runner' });
    this.loop = new LeaseLoop({
      step: () => this.runOnce(),
      pollMs: options.pollMs ?? 1000,
      ...(options.timers ? { timers: options.timers } : {}),
      logger: this.log,
      name: 'notify due runner',
    });
  }

  start(): void {
    this.loop.start();
  }

  /** Looks for due work now. */
  wake(): void {
    this.loop.wake();
  }

  /** Stops after the batch in hand (each item finished, or its lease given up). */
  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /** One step: claims and works a batch of each kind; false when neither had anything due. */
  async runOnce(): Promise<boolean> {
    const due = await this.options.store.claimDue(this.owner, this.leaseMs, this.batch);
    await this.each(due, async (item) => {
      try {
        await this.options.work.runDue(item, this.owner);
      } catch (err) {
        // Its lease expires and it is taken again (never at once: a lasting failure does not spin).
        this.log.error(
          { err, notificationId: item.notification.id },
          'due notification failed; retried at its lease expiry',
        );
      }
    });
    const digests = this.options.digests
      ? await this.options.digests.claimDue(this.owner, this.leaseMs, this.batch)
      : [];
    await this.each(digests, async (digest) => {
      try {
        await this.options.work.sendDigest(digest, this.owner);
      } catch (err) {
        // Its lease expires and it is taken again.
        this.log.error({ err, digestId: digest.id }, 'due digest failed; retried at its lease expiry');
      }
    });
    return due.length > 0 || digests.length > 0;
  }

  private async each<T>(items: readonly T[], fn: (item: T) => Promise<void>): Promise<void> {
    for (let i = 0; i < items.length; i += this.concurrency) {
      await Promise.all(items.slice(i, i + this.concurrency).map(fn));
    }
  }
}
