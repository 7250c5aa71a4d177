import { MemoryCapLedger } from '../../../../services/notification/notify/caps/memory-ledger';
import { ManualClock } from '../../../support/manual-clock';
import { capUserId, describeCapLedgerContract } from './cap-ledger-contract';

describeCapLedgerContract('MemoryCapLedger', async (caps, clock) => new MemoryCapLedger({ caps, clock }));

describe('MemoryCapLedger bounds', () => {
  const HOUR = 3600_000;

  it('keeps only the takes inside the longest window, at most the largest limit per user and channel', async () => {
    const clock = new ManualClock();
    const ledger = new MemoryCapLedger({
      caps: [
        { channel: 'sms', limit: 3, per: 3600 },
        { channel: 'sms', limit: 2, per: 60 },
      ],
      clock,
    });
    const user = capUserId();
    for (let i = 0; i < 10; i++) {
      await ledger.take(user, 'sms');
      clock.advance(61_000);
    }
    expect(ledger.size()).toEqual({ users: 1, takes: 3 });
    clock.advance(HOUR);
    // The next take drops every expired one: only itself is left.
    expect((await ledger.take(user, 'sms')).taken).toBe(true);
    expect(ledger.size()).toEqual({ users: 1, takes: 1 });
  });

  it('at its bound of users, a new user forgets the one least recently taken for (here expired: nothing is lost)', async () => {
    const clock = new ManualClock();
    const ledger = new MemoryCapLedger({
      caps: [{ channel: 'sms', limit: 1, per: 3600 }],
      clock,
      maxUsers: 2,
    });
    const [a, b, c] = [capUserId(), capUserId(), capUserId()];
    await ledger.take(a, 'sms');
    clock.advance(HOUR);
    await ledger.take(b, 'sms');
    await ledger.take(c, 'sms');
    expect(ledger.size().users).toBe(2);
    // b's take is still counted.
    expect((await ledger.take(b, 'sms')).taken).toBe(false);
  });

  it('at its bound of users with none expired, the user least recently taken for is forgotten; never more than the bound', async () => {
    const clock = new ManualClock();
    const ledger = new MemoryCapLedger({
      caps: [{ channel: 'sms', limit: 1, per: 3600 }],
      clock,
      maxUsers: 2,
    });
    const [a, b, c] = [capUserId(), capUserId(), capUserId()];
    await ledger.take(a, 'sms');
    await ledger.take(b, 'sms');
    // a taken for again (refused): now b is the least recent.
    expect((await ledger.take(a, 'sms')).taken).toBe(false);
    await ledger.take(c, 'sms');
    expect(ledger.size().users).toBe(2);
    expect((await ledger.take(a, 'sms')).taken).toBe(false);
    expect((await ledger.take(c, 'sms')).taken).toBe(false);
    expect((await ledger.take(b, 'sms')).taken).toBe(true);
    expect(ledger.size().users).toBe(2);
  });

  it('a channel without caps keeps nothing', async () => {
    const ledger = new MemoryCapLedger({ caps: [{ channel: 'sms', limit: 1, per: 3600 }] });
    for (let i = 0; i < 5; i++) await ledger.take(capUserId(), 'push');
    expect(ledger.size()).toEqual({ users: 0, takes: 0 });
  });
});
