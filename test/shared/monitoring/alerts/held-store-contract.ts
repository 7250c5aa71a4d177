/**
 * The one behaviour suite of a HeldAlertStore, run against every implementation (memory here, the
 * monitor's database store on PGlite and PostgreSQL): hold and claim in order, the bound with its
 * dropped count, two owners claiming (each record once), an expired lease claimed again, completion
 * deleting only what the owner still holds; the outbox's records kept already leased to their sender.
 */
import type { AlertRecord } from '../../../../shared/monitoring/alerts/channels';
import {
  type DeferredTier,
  type HeldAlertStore,
  OUTBOX,
} from '../../../../shared/monitoring/alerts/held-store';
import { AlertTier } from '../../../../shared/monitoring/alerts/tiers';

/** What a backend's test file provides. */
export interface HeldStoreBackend {
  /** A store over the backend; several calls give stores on the same records (replicas). */
  store(): HeldAlertStore;
  /** Empties the backend between tests. */
  reset(): Promise<void>;
  close(): Promise<void>;
}

const P1: DeferredTier = AlertTier.P1_BUSINESS_HOURS;
const P2: DeferredTier = AlertTier.P2_DIGEST;
const HOUR = 3_600_000;

/** A held record whose title names it. */
export function heldRecord(title: string, tier: DeferredTier = P1): AlertRecord {
  return {
    kind: 'alert',
    title,
    message: `${title} message`,
    severity: 'high',
    context: { tier, service: 'billing' },
    tier,
    raisedAt: Date.UTC(2026, 0, 5, 20, 0),
    id: `id-${title}`,
    sourceService: 'billing',
  };
}

/** Registers the suite for one backend. */
export function describeHeldStoreContract(name: string, open: () => Promise<HeldStoreBackend>): void {
  describe(`held alert store on ${name}`, () => {
    let backend: HeldStoreBackend;
    beforeAll(async () => {
      backend = await open();
    });
    afterAll(async () => {
      await backend?.close();
    });
    beforeEach(async () => {
      await backend.reset();
    });

    it('keeps held records per tier and hands them out oldest first, whole, with their tier', async () => {
      const s = backend.store();
      for (const t of ['a', 'b', 'c']) await s.hold(P1, heldRecord(t), 10);
      await s.hold(P2, heldRecord('d', P2), 10);
      expect(await s.count(P1)).toBe(3);
      expect(await s.count(P2)).toBe(1);
      const claim = await s.claim(P1, 'm1', HOUR, 10);
      expect(claim).toMatchObject({ tier: P1, owner: 'm1', dropped: 0 });
      expect(claim.alerts).toEqual([heldRecord('a'), heldRecord('b'), heldRecord('c')]);
      expect(claim.ids).toHaveLength(3);
    });

    it('completion deletes what was claimed; claimed records are not claimed again while leased', async () => {
      const s = backend.store();
      for (const t of ['a', 'b']) await s.hold(P1, heldRecord(t), 10);
      const claim = await s.claim(P1, 'm1', HOUR, 10);
      expect((await s.claim(P1, 'm2', HOUR, 10)).alerts).toEqual([]);
      expect(await s.count(P1)).toBe(2);
      await s.complete(claim);
      expect(await s.count(P1)).toBe(0);
      expect((await s.claim(P1, 'm2', 0, 10)).alerts).toEqual([]);
    });

    it('claims at most `limit` records; the next claim takes the rest', async () => {
      const s = backend.store();
      for (const t of ['a', 'b', 'c']) await s.hold(P2, heldRecord(t, P2), 10);
      const first = await s.claim(P2, 'm1', HOUR, 2);
      const second = await s.claim(P2, 'm1', HOUR, 2);
      expect(first.alerts.map((a) => a.title)).toEqual(['a', 'b']);
      expect(second.alerts.map((a) => a.title)).toEqual(['c']);
    });

    it('at the bound drops the oldest and counts it; the count travels with the next claim only', async () => {
      const s = backend.store();
      for (const t of ['a', 'b', 'c', 'd', 'e']) await s.hold(P1, heldRecord(t), 3);
      expect(await s.count(P1)).toBe(3);
      const claim = await s.claim(P1, 'm1', HOUR, 10);
      expect(claim.alerts.map((a) => a.title)).toEqual(['c', 'd', 'e']);
      expect(claim.dropped).toBe(2);
      expect((await s.claim(P1, 'm1', HOUR, 10)).dropped).toBe(0);
      // The other tier's count is its own.
      expect((await s.claim(P2, 'm1', HOUR, 10)).dropped).toBe(0);
    });

    it('the bound counts records not being sent: a claimed batch is never dropped under its sender', async () => {
      const s = backend.store();
      for (const t of ['a', 'b']) await s.hold(P1, heldRecord(t), 2);
      const sending = await s.claim(P1, 'm1', HOUR, 10);
      for (const t of ['c', 'd', 'e']) await s.hold(P1, heldRecord(t), 2);
      expect(await s.count(P1)).toBe(4);
      await s.complete(sending);
      const next = await s.claim(P1, 'm1', HOUR, 10);
      expect(next.alerts.map((a) => a.title)).toEqual(['d', 'e']);
      expect(next.dropped).toBe(1);
    });

    it('two owners claiming at once: each record goes to exactly one of them', async () => {
      const s1 = backend.store();
      const s2 = backend.store();
      const titles = [...Array(20).keys()].map((i) => `r${i}`);
      for (const t of titles) await s1.hold(P2, heldRecord(t, P2), 100);
      const claims = await Promise.all(
        [...Array(6).keys()].map((i) => (i % 2 ? s1 : s2).claim(P2, `m${i}`, HOUR, 5)),
      );
      const got = claims.flatMap((c) => c.alerts.map((a) => a.title));
      expect(got.sort()).toEqual([...titles].sort());
      expect(new Set(claims.flatMap((c) => c.ids)).size).toBe(20);
    });

    it('a renewed claim is not claimed by another owner; a renewal by an owner that lost the claim changes nothing', async () => {
      const s1 = backend.store();
      const s2 = backend.store();
      await s1.hold(P2, heldRecord('a', P2), 10);
      // Claimed with a lease already over, then renewed for an hour while the batch is on its way.
      const slow = await s1.claim(P2, 'slow', 0, 10);
      await s1.renew(slow, HOUR);
      expect((await s2.claim(P2, 'm2', HOUR, 10)).alerts).toEqual([]);
      // The lease runs out again; m2 takes the record (its own lease already over too).
      await s1.renew(slow, 0);
      const taken = await s2.claim(P2, 'm2', 0, 10);
      expect(taken.alerts.map((x) => x.title)).toEqual(['a']);
      // The old owner's renewal does not apply to a record it lost: m3 can take it.
      await s1.renew(slow, HOUR);
      expect((await s1.claim(P2, 'm3', HOUR, 10)).alerts.map((x) => x.title)).toEqual(['a']);
    });

    it('a claim whose lease ran out is claimed again; the first owner completing then deletes nothing', async () => {
      const s1 = backend.store();
      const s2 = backend.store();
      await s1.hold(P1, heldRecord('a'), 10);
      // The first owner claimed with a lease already over (it died, and its lease ran out).
      const dead = await s1.claim(P1, 'dead', 0, 10);
      expect(dead.alerts.map((a) => a.title)).toEqual(['a']);
      const retry = await s2.claim(P1, 'm2', HOUR, 10);
      expect(retry.alerts.map((a) => a.title)).toEqual(['a']);
      await s1.complete(dead);
      expect(await s1.count(P1)).toBe(1);
      await s2.complete(retry);
      expect(await s2.count(P1)).toBe(0);
    });
    it('an outbox record kept leased to its sender is not claimed while the lease runs, nor dropped at a bound', async () => {
      const s1 = backend.store();
      const s2 = backend.store();
      const page = { ...heldRecord('页面 🚨 שלום'), tier: AlertTier.P0_PAGE };
      const sending = await s1.holdClaimed(OUTBOX, page, 'm1', HOUR);
      expect(sending).toMatchObject({ tier: OUTBOX, owner: 'm1', alerts: [page], dropped: 0 });
      expect(sending.ids).toHaveLength(1);
      expect(await s2.count(OUTBOX)).toBe(1);
      expect((await s2.claim(OUTBOX, 'm2', HOUR, 10)).alerts).toEqual([]);
      // The other queues are apart: the held P1 alerts' bound and claims do not touch it.
      await s2.hold(P1, heldRecord('b'), 1);
      expect((await s2.claim(P1, 'm2', HOUR, 10)).alerts.map((a) => a.title)).toEqual(['b']);
      await s1.complete(sending);
      expect(await s2.count(OUTBOX)).toBe(0);
    });

    it('an outbox record whose sender died is claimed, whole, once its lease has run out; the dead sender completing deletes nothing', async () => {
      const s1 = backend.store();
      const s2 = backend.store();
      const page = { ...heldRecord('页面 🚨 שלום'), tier: AlertTier.P0_PAGE };
      // Kept with a lease already over: its sender died and the lease ran out.
      const dead = await s1.holdClaimed(OUTBOX, page, 'dead', 0);
      const retry = await s2.claim(OUTBOX, 'm2', HOUR, 10);
      expect(retry.alerts).toEqual([page]);
      expect((await s1.claim(OUTBOX, 'm3', HOUR, 10)).alerts).toEqual([]);
      await s1.complete(dead);
      expect(await s2.count(OUTBOX)).toBe(1);
      await s2.complete(retry);
      expect(await s2.count(OUTBOX)).toBe(0);
    });
  });
}
