/**
 * The one behaviour suite every CapLedger passes (memory, PGlite, PostgreSQL): sliding windows
 * (a take counts in (now - per, now]), all caps of the channel or none, the cap text, nextFreeAt,
 * users and channels apart, eraseUser. A manual clock moves time (the database ledger's `now`
 * override); tests share a ledger backend per file, so user ids are unique.
 */
import type { CapConfig } from '../../../../services/notification/notify/config';
import type { CapLedger } from '../../../../services/notification/notify/timing';
import { ManualClock } from '../../../support/manual-clock';

/** What a backend's test file provides: a ledger over `caps` reading time from `clock`. */
export type OpenCapLedger = (caps: readonly CapConfig[], clock: ManualClock) => Promise<CapLedger>;

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

let counter = 0;
/** A user id no other test uses (emoji, CJK and RTL: ids are stored as given). */
export function capUserId(prefix = 'cap'): string {
  return `${prefix}-😀中文עברית-${Date.now().toString(36)}-${(counter++).toString(36)}`;
}

/** Registers the contract suite for one ledger backend. */
export function describeCapLedgerContract(name: string, open: OpenCapLedger): void {
  describe(`${name}: CapLedger contract`, () => {
    async function make(caps: CapConfig[]) {
      const clock = new ManualClock(new Date('2026-11-30T10:00:00.000Z'));
      return { ledger: await open(caps, clock), clock };
    }

    it('with a cap of 3 SMS per hour, three are taken and the fourth is refused with the cap and the instant a slot frees', async () => {
      const { ledger, clock } = await make([{ channel: 'sms', limit: 3, per: 3600 }]);
      const user = capUserId();
      const t0 = clock.date();
      for (let i = 0; i < 3; i++) {
        expect(await ledger.take(user, 'sms')).toEqual({ taken: true });
        clock.advance(10 * MINUTE);
      }
      expect(await ledger.take(user, 'sms')).toEqual({
        taken: false,
        cap: 'sms 3/1h',
        nextFreeAt: new Date(t0.getTime() + HOUR),
      });
    });

    it('the window slides: a take leaves it exactly `per` after it was made, not a moment before', async () => {
      const { ledger, clock } = await make([{ channel: 'sms', limit: 3, per: 3600 }]);
      const user = capUserId();
      const t0 = clock.date().getTime();
      for (let i = 0; i < 3; i++) {
        await ledger.take(user, 'sms');
        clock.advance(20 * MINUTE);
      }
      // t0 + 60m: the first take (at t0) is out of (now - 1h, now].
      clock.current = new Date(t0 + HOUR - 1);
      expect(await ledger.take(user, 'sms')).toMatchObject({ taken: false, nextFreeAt: new Date(t0 + HOUR) });
      clock.current = new Date(t0 + HOUR);
      expect(await ledger.take(user, 'sms')).toEqual({ taken: true });
      // Now takes at t0+20m, t0+40m, t0+60m: the next slot frees at t0+20m+1h.
      expect(await ledger.take(user, 'sms')).toMatchObject({
        taken: false,
        nextFreeAt: new Date(t0 + 20 * MINUTE + HOUR),
      });
    });

    it('every cap of the channel or none: a take refused by the hourly cap does not count against the daily one', async () => {
      const { ledger, clock } = await make([
        { channel: 'sms', limit: 3, per: 3600 },
        { channel: 'sms', limit: 4, per: 86400 },
      ]);
      const user = capUserId();
      const t0 = clock.date().getTime();
      for (let i = 0; i < 3; i++) expect((await ledger.take(user, 'sms')).taken).toBe(true);
      for (let i = 0; i < 5; i++) {
        expect(await ledger.take(user, 'sms')).toMatchObject({ taken: false, cap: 'sms 3/1h' });
      }
      clock.current = new Date(t0 + HOUR);
      expect((await ledger.take(user, 'sms')).taken).toBe(true);
      // Four in the day: the daily cap stops it now, until the first take leaves the day.
      expect(await ledger.take(user, 'sms')).toEqual({
        taken: false,
        cap: 'sms 4/1d',
        nextFreeAt: new Date(t0 + DAY),
      });
    });

    it('when several caps are full, nextFreeAt is when every one has a slot, and the cap named is the one freeing last', async () => {
      const { ledger, clock } = await make([
        { channel: 'push', limit: 2, per: 86400 },
        { channel: 'push', limit: 1, per: 60 },
      ]);
      const user = capUserId();
      const t0 = clock.date().getTime();
      expect((await ledger.take(user, 'push')).taken).toBe(true);
      clock.advance(2 * MINUTE);
      expect((await ledger.take(user, 'push')).taken).toBe(true);
      // Both full: the minute cap frees at t0+3m, the daily one at t0+1d.
      expect(await ledger.take(user, 'push')).toEqual({
        taken: false,
        cap: 'push 2/1d',
        nextFreeAt: new Date(t0 + DAY),
      });
      clock.current = new Date(t0 + DAY);
      expect((await ledger.take(user, 'push')).taken).toBe(true);
    });

    it('the cap text shows `per` in its largest whole unit', async () => {
      for (const [per, text] of [
        [5400, 'email 1/90m'],
        [86400, 'email 1/1d'],
        [604800, 'email 1/7d'],
        [45, 'email 1/45s'],
        [7200, 'email 1/2h'],
        [90.5, 'email 1/90.5s'],
      ] as const) {
        const { ledger } = await make([{ channel: 'email', limit: 1, per }]);
        const user = capUserId();
        await ledger.take(user, 'email');
        expect(await ledger.take(user, 'email')).toMatchObject({ taken: false, cap: text });
      }
    });

    it('users and channels are counted apart; a channel without caps is always taken', async () => {
      const { ledger } = await make([
        { channel: 'sms', limit: 1, per: 3600 },
        { channel: 'email', limit: 1, per: 3600 },
      ]);
      const [a, b] = [capUserId(), capUserId()];
      expect((await ledger.take(a, 'sms')).taken).toBe(true);
      expect((await ledger.take(a, 'sms')).taken).toBe(false);
      expect((await ledger.take(b, 'sms')).taken).toBe(true);
      expect((await ledger.take(a, 'email')).taken).toBe(true);
      for (let i = 0; i < 20; i++) expect(await ledger.take(a, 'push')).toEqual({ taken: true });
    });

    it('eraseUser forgets the user counts (and only theirs)', async () => {
      const { ledger } = await make([{ channel: 'sms', limit: 1, per: 86400 }]);
      const [gone, kept] = [capUserId('gone'), capUserId('kept')];
      await ledger.take(gone, 'sms');
      await ledger.take(kept, 'sms');
      await ledger.eraseUser(gone);
      await ledger.eraseUser(capUserId('never'));
      expect((await ledger.take(gone, 'sms')).taken).toBe(true);
      expect((await ledger.take(kept, 'sms')).taken).toBe(false);
    });
  });
}
