/**
 * The outbox of alerts sent at once, on the monitor's database (run by outbox-pglite.test.ts and
 * outbox-postgres.test.ts): two dispatchers (replicas, or one process and its restart) on one
 * database with fake clocks and timers. A sender that "dies" is a dispatcher dropped without
 * shutdown: its timers never fire again. Leases are the database's, so a lease "runs out" by moving
 * its time back in the table (as the held-store tests move a digest turn).
 */
import type { Knex } from 'knex';
import { AlertHub } from '../../../services/monitor/alerts/alert-hub';
import { DatabaseAlertStore } from '../../../services/monitor/alerts/database-store';
import { DatabaseHeldAlertStore } from '../../../services/monitor/alerts/held-database-store';
import { silentLogger } from '../../../shared/logging/logger';
import type { AlertBatch, AlertChannel, AlertRecord } from '../../../shared/monitoring/alerts/channels';
import { MemoryHeldAlertStore, OUTBOX } from '../../../shared/monitoring/alerts/held-store';
import { TierAwareDispatcher } from '../../../shared/monitoring/alerts/tier-dispatcher';
import { AlertTier, BusinessHours } from '../../../shared/monitoring/alerts/tiers';
import { FakeClock, FakeTimers } from '../../shared/monitoring/helpers';
import { until } from '../../support/wait';
import { resetHeldAlertTables, truncateAlertTables } from './support';

/** A channel that records each batch and, while `hang` is set, never finishes (a webhook retrying). */
class Channel implements AlertChannel {
  readonly batches: AlertBatch[] = [];
  private releases: Array<() => void> = [];
  constructor(
    readonly name: string,
    private hang = false,
  ) {}
  send(batch: AlertBatch): Promise<void> {
    this.batches.push(batch);
    return this.hang ? new Promise<void>((resolve) => this.releases.push(resolve)) : Promise.resolve();
  }
  release(): void {
    this.hang = false;
    for (const r of this.releases.splice(0)) r();
  }
  ids(): string[] {
    return this.batches.flatMap((b) => b.alerts.map((a) => a.id ?? ''));
  }
}

const LEASE_MS = 60_000;
// Tuesday 2026-01-06 10:00 UTC: business hours (Mon-Fri 09:00-17:00 UTC) are open, P1 goes out at once.
const TUE_1000 = Date.UTC(2026, 0, 6, 10, 0);

function page(title: string, tier: AlertTier = AlertTier.P0_PAGE): AlertRecord {
  return {
    kind: 'alert',
    title,
    message: `${title}: 結帳 🔥 לא זמין`,
    severity: 'critical',
    context: { tier },
    tier,
    raisedAt: TUE_1000,
    id: `id-${title}`,
    sourceService: 'checkout',
  };
}

/** Registers the suite; `knexes()` gives the two replicas' connections (the same one on PGlite). */
export function describeOutbox(name: string, knexes: () => [Knex, Knex]): void {
  describe(`alert outbox on ${name}`, () => {
    beforeEach(async () => {
      await resetHeldAlertTables(knexes()[0]);
      await truncateAlertTables(knexes()[0]);
    });

    function replica(i: 0 | 1, owner: string, hang = false) {
      const knex = knexes()[i];
      const clock = new FakeClock(0, TUE_1000);
      const timers = new FakeTimers(clock);
      const channel = new Channel(`pager-${owner}`, hang);
      const store = new DatabaseHeldAlertStore(knex);
      const dispatcher = new TierAwareDispatcher({
        channels: { P0_PAGE: [channel], P1_BUSINESS_HOURS: [channel] },
        businessHours: new BusinessHours({
          time_zone: 'UTC',
          days: ['mon', 'tue', 'wed', 'thu', 'fri'],
          open: '09:00',
          close: '17:00',
        }),
        heldStore: store,
        owner,
        claimLeaseMs: LEASE_MS,
        clock,
        timers,
        logger: silentLogger(),
      });
      return { dispatcher, timers, channel, store, clock };
    }

    /** The lease of every outbox row runs out (its sender died and time passed). */
    const leasesRunOut = (knex: Knex) =>
      knex.raw(`UPDATE monitor_held_alerts SET lease_until = now() - interval '1 second' WHERE tier = ?`, [
        OUTBOX,
      ]);

    it('SendAlert through the hub answers once the alert is in the outbox; a sender that dies leaves it to another replica, which sends it after the lease, once', async () => {
      const dead = replica(0, 'm1', true);
      const hub = new AlertHub({
        router: dead.dispatcher,
        recentSize: 10,
        maxWatchers: 1,
        watchBufferSize: 4,
        defaultSource: 'monitor',
        clock: dead.clock,
      });
      const raised = await hub.raise({
        kind: 'generic',
        title: 'Checkout down 結帳 🔥',
        severity: 'critical',
        context: { tier: 'P0_PAGE' },
      });
      // Answered while the channel still works on it: the alert is kept, leased to m1.
      expect(dead.channel.ids()).toEqual([raised.id]);
      expect(await dead.store.count(OUTBOX)).toBe(1);
      // m1 is killed: no stop, its timers never fire again. m2's look while the lease runs sends nothing.
      const other = replica(1, 'm2');
      other.timers.advance(0);
      await other.dispatcher.settled();
      expect(other.channel.batches).toEqual([]);
      await leasesRunOut(knexes()[0]);
      other.timers.advance(LEASE_MS / 2);
      await other.dispatcher.settled();
      expect(other.channel.ids()).toEqual([raised.id]);
      expect(other.channel.batches[0]).toMatchObject({ tier: 'P0_PAGE', reason: 'immediate', dropped: 0 });
      expect(other.channel.batches[0]!.alerts[0]!.title).toBe('Checkout down 結帳 🔥');
      expect(await other.store.count(OUTBOX)).toBe(0);
      // Its next look finds nothing: sent once.
      other.timers.advance(LEASE_MS / 2);
      await other.dispatcher.settled();
      expect(other.channel.batches).toHaveLength(1);
      await other.dispatcher.shutdown();
    });

    it('a restarted dispatcher (new owner) sends at its first look what the killed one left, a P1 within business hours too', async () => {
      const killed = replica(0, 'm1', true);
      await killed.dispatcher.accept(page('p0'));
      await killed.dispatcher.accept(page('p1', AlertTier.P1_BUSINESS_HOURS));
      expect(await killed.store.count(OUTBOX)).toBe(2);
      await leasesRunOut(knexes()[0]);
      const restarted = replica(0, 'm1-restarted');
      restarted.timers.advance(0);
      await restarted.dispatcher.settled();
      // Each on its own, as it would have gone (the same record id: the same idempotency key).
      expect(restarted.channel.batches.map((b) => [b.tier, b.alerts.map((a) => a.id)])).toEqual([
        ['P0_PAGE', ['id-p0']],
        ['P1_BUSINESS_HOURS', ['id-p1']],
      ]);
      expect(await restarted.store.count(OUTBOX)).toBe(0);
      await restarted.dispatcher.shutdown();
    });

    it('an alert whose channels are through leaves the outbox and is not sent again', async () => {
      const first = replica(0, 'm1');
      const accepted = await first.dispatcher.accept(page('done'));
      expect(accepted.durable).toBe(true);
      await accepted.delivered;
      expect(first.channel.ids()).toEqual(['id-done']);
      expect(await first.store.count(OUTBOX)).toBe(0);
      const other = replica(1, 'm2');
      other.timers.advance(LEASE_MS);
      await other.dispatcher.settled();
      expect(other.channel.batches).toEqual([]);
      await first.dispatcher.shutdown();
      await other.dispatcher.shutdown();
    });

    it('two live replicas do not both send one: the sender renews its lease while its channel works, and deletes the alert when through', async () => {
      const sender = replica(0, 'm1', true);
      const accepted = await sender.dispatcher.accept(page('slow'));
      const other = replica(1, 'm2');
      // The lease is about to run out, then the sender's renewal (every half lease) extends it.
      await leasesRunOut(knexes()[0]);
      sender.timers.advance(LEASE_MS / 2);
      await until(
        async () => {
          const r = await knexes()[1].raw(
            `SELECT count(*) AS n FROM monitor_held_alerts WHERE tier = ? AND lease_until > now()`,
            [OUTBOX],
          );
          return Number((r as { rows: Array<{ n: string | number }> }).rows[0]!.n) === 1;
        },
        'the renewed lease',
        10_000,
      );
      other.timers.advance(LEASE_MS / 2);
      await other.dispatcher.settled();
      expect(other.channel.batches).toEqual([]);
      sender.channel.release();
      await accepted.delivered;
      expect(await sender.store.count(OUTBOX)).toBe(0);
      other.timers.advance(LEASE_MS / 2);
      await other.dispatcher.settled();
      expect(other.channel.batches).toEqual([]);
      expect(sender.channel.ids()).toEqual(['id-slow']);
      await sender.dispatcher.shutdown();
      await other.dispatcher.shutdown();
    });

    it('a group notification in the outbox is marked sent in the notification log: after its sender dies the outbox resends it, the next group flush does not', async () => {
      const grouping = {
        groupBy: ['cluster'],
        groupWaitMs: 30_000,
        groupIntervalMs: 60_000,
        repeatIntervalMs: 3_600_000,
      };
      const hubOn = (r: ReturnType<typeof replica>, i: 0 | 1, owner: string) =>
        new AlertHub({
          router: r.dispatcher,
          recentSize: 10,
          maxWatchers: 1,
          watchBufferSize: 4,
          defaultSource: 'monitor',
          clock: r.clock,
          lifecycle: { store: new DatabaseAlertStore(knexes()[i]), grouping, owner },
        });
      const dead = replica(0, 'm1', true);
      const hubA = hubOn(dead, 0, 'm1');
      await hubA.raise({
        kind: 'generic',
        title: 'disk full',
        severity: 'critical',
        context: { tier: 'P0_PAGE', cluster: 'eu-1' },
      });
      dead.timers.advance(30_000);
      await hubA.lifecycle.tick();
      await hubA.lifecycle.settled();
      // Handed to the channel (which hangs) and kept in the outbox: the log's row is sent.
      expect(dead.channel.batches.map((b) => b.alerts[0]!.title)).toEqual(['[FIRING:1] cluster=eu-1']);
      expect(await dead.store.count(OUTBOX)).toBe(1);
      const log = await knexes()[0].raw('SELECT state FROM monitor_notification_log');
      expect((log as { rows: Array<{ state: string }> }).rows.map((r) => r.state)).toEqual(['sent']);
      // m1 dies. m2 takes up the group (its alert counted as notified) and flushes it: nothing new.
      const other = replica(1, 'm2');
      const hubB = hubOn(other, 1, 'm2');
      other.clock.advance(30_000);
      await hubB.lifecycle.tick();
      other.clock.advance(30_000);
      await hubB.lifecycle.tick();
      await hubB.lifecycle.settled();
      expect(other.channel.batches).toEqual([]);
      // Once m1's lease has run out, the outbox resends the same summary, once.
      await leasesRunOut(knexes()[0]);
      other.timers.advance(LEASE_MS / 2);
      await other.dispatcher.settled();
      expect(other.channel.batches.map((b) => b.alerts[0]!.title)).toEqual(['[FIRING:1] cluster=eu-1']);
      expect(other.channel.batches[0]!.alerts[0]!.id).toBe(dead.channel.batches[0]!.alerts[0]!.id);
      other.timers.advance(LEASE_MS / 2);
      await hubB.lifecycle.tick();
      await other.dispatcher.settled();
      expect(other.channel.batches).toHaveLength(1);
      await hubB.stop();
    });
  });
}

/** The memory store keeps today's behaviour (registered by one of the files only). */
export function describeOutboxMemory(): void {
  describe('alert outbox with the memory store', () => {
    it('keeps nothing (as before): an alert sent at once is accepted at once, not durable', async () => {
      const clock = new FakeClock(0, TUE_1000);
      const store = new MemoryHeldAlertStore(clock);
      const channel = new Channel('pager', true);
      const dispatcher = new TierAwareDispatcher({
        channels: { P0_PAGE: [channel] },
        heldStore: store,
        clock,
        timers: new FakeTimers(clock),
        logger: silentLogger(),
      });
      const accepted = await dispatcher.accept(page('p0'));
      expect(accepted.durable).toBe(false);
      expect(channel.ids()).toEqual(['id-p0']);
      expect(await store.count(OUTBOX)).toBe(0);
      channel.release();
      await accepted.delivered;
      await dispatcher.shutdown();
    });
  });
}
