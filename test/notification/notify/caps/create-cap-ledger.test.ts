/**
 * createCapLedger: the memory ledger (reading the clock given) without storage, the database ledger
 * on the service's storage otherwise, both over the `notify.caps` of the validated config.
 */
import { NotifyConfigSchema } from '../../../../services/notification/notify/config';
import {
  DatabaseCapLedger,
  MemoryCapLedger,
  createCapLedger,
} from '../../../../services/notification/notify/caps';
import { notificationMigrations } from '../../../../services/notification/migrations';
import { runMigrations } from '../../../../shared/storage/migrations';
import { pooledTestDatabase } from '../../../support/database';
import { ManualClock } from '../../../support/manual-clock';
import { capUserId } from './cap-ledger-contract';

const config = NotifyConfigSchema.parse({ caps: [{ channel: 'sms', limit: 1, per: '1h' }] });

describe('createCapLedger', () => {
  it('without storage: the memory ledger over notify.caps, reading the clock given', async () => {
    const clock = new ManualClock();
    const ledger = createCapLedger(config, undefined, clock);
    expect(ledger).toBeInstanceOf(MemoryCapLedger);
    const user = capUserId();
    expect((await ledger.take(user, 'sms')).taken).toBe(true);
    expect(await ledger.take(user, 'sms')).toEqual({
      taken: false,
      cap: 'sms 1/1h',
      nextFreeAt: new Date(clock.now() + 3600_000),
    });
    clock.advance(3600_000);
    expect((await ledger.take(user, 'sms')).taken).toBe(true);
  });

  it('with storage: the database ledger on its knex', async () => {
    const db = await pooledTestDatabase('capsfactory', 2);
    try {
      const knex = await db.pool();
      await runMigrations(knex, notificationMigrations);
      const ledger = createCapLedger(config, { knex });
      expect(ledger).toBeInstanceOf(DatabaseCapLedger);
      const user = capUserId();
      expect((await ledger.take(user, 'sms')).taken).toBe(true);
      expect(await ledger.take(user, 'sms')).toMatchObject({ taken: false, cap: 'sms 1/1h' });
      await ledger.eraseUser(user);
      expect((await knex('notify_cap_takes').where({ user_id: user })).length).toBe(0);
    } finally {
      await db.close();
    }
  });
});
