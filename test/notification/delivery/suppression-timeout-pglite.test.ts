/**
 * The suppression lookup bound on PGlite, which cannot cancel a statement (one connection, in
 * process): the caller's wait is bounded instead, and the store never asks knex to time a query out
 * (knex would close the one connection, PGlite itself). Here a transaction holds the one connection,
 * as a long migration would.
 */
import type { Knex } from 'knex';
import { SuppressionLookupError, Suppressions } from '../../../services/notification/delivery/suppression';
import { DatabaseSuppressionStore } from '../../../services/notification/delivery/suppression-database-store';
import { FakeTimers } from '../../shared/monitoring/helpers';
import { requireVmModules } from './support';
import { migratedPglite } from '../../support/database';

let knex: Knex;

beforeAll(async () => {
  requireVmModules();
  knex = await migratedPglite('notification');
});

afterAll(async () => {
  await knex?.destroy();
});

it('on PGlite, a lookup waiting for the one connection is released at the bound, and PGlite keeps working', async () => {
  const timers = new FakeTimers();
  // A store bound far smaller than the test: were it applied on PGlite, knex would close PGlite.
  const list = new Suppressions({
    store: new DatabaseSuppressionStore(knex, { lookupTimeoutMs: 10 }),
    lookupTimeoutMs: 500,
    timers,
  });
  const lookups: { timeout?: number }[] = [];
  const onQuery = (q: { sql: string; timeout?: number }) => {
    if (q.sql.startsWith('SELECT recipient FROM suppressions')) lookups.push(q);
  };
  knex.on('query', onQuery);
  await list.add({ channel: 'sms', recipient: '+15557770001', reason: 'stop_keyword', source: 'inbound:t' });
  const trx = await knex.transaction();
  let outcome: unknown = 'pending';
  const lookup = list.findSuppressed('sms', ['+15557770001']).then(
    (found) => (outcome = found),
    (err: unknown) => (outcome = err),
  );
  // The lookup's query waits for the connection the transaction holds.
  await trx.raw('SELECT pg_sleep(0.05)');
  expect(outcome).toBe('pending');
  timers.advance(500);
  await lookup;
  expect(outcome).toBeInstanceOf(SuppressionLookupError);
  expect(outcome).toMatchObject({ reason: 'timeout' });
  await trx.commit();
  // The one connection is free again: the list answers, PGlite was not closed.
  expect(await list.findSuppressed('sms', ['+15557770001', '+15557770002'])).toEqual(
    new Set(['+15557770001']),
  );
  expect(await list.isSuppressed('sms', '+15557770001')).toBe(true);
  knex.off('query', onQuery);
  // No knex timeout on PGlite's statements (its expiry would close PGlite).
  expect(lookups.length).toBeGreaterThan(0);
  for (const q of lookups) expect(q.timeout).toBeUndefined();
});

describe('on PGlite, every other call of the list is released at the bound too', () => {
  const NUMBER = '+15557770009';
  it.each([
    [
      'add',
      (l: Suppressions) => l.add({ channel: 'sms', recipient: NUMBER, reason: 'manual', source: 'api:t' }),
    ],
    ['remove', (l: Suppressions) => l.remove('sms', NUMBER)],
    ['removeByHand', (l: Suppressions) => l.removeByHand('sms', NUMBER, 'api:t')],
    ['isSuppressed', (l: Suppressions) => l.isSuppressed('sms', NUMBER)],
    ['reasonsOf', (l: Suppressions) => l.reasonsOf('sms', [NUMBER])],
  ] as const)(
    '%s waiting for the one connection answers a timeout at the bound; PGlite keeps working',
    async (_name, call) => {
      const timers = new FakeTimers();
      const list = new Suppressions({
        store: new DatabaseSuppressionStore(knex, { lookupTimeoutMs: 10 }),
        lookupTimeoutMs: 500,
        timers,
      });
      const trx = await knex.transaction();
      let outcome: unknown = 'pending';
      const pending = call(list).then(
        (v: unknown) => (outcome = v),
        (err: unknown) => (outcome = err),
      );
      await trx.raw('SELECT pg_sleep(0.05)');
      expect(outcome).toBe('pending');
      timers.advance(500);
      await pending;
      expect(outcome).toBeInstanceOf(SuppressionLookupError);
      expect(outcome).toMatchObject({ reason: 'timeout' });
      await trx.commit();
      // PGlite was not closed: the list answers (the statement itself ran once the connection was
      // free: an add may have taken effect after its timeout, as delivery/README.md says).
      await list.remove('sms', NUMBER);
      expect(await list.isSuppressed('sms', NUMBER)).toBe(false);
    },
  );
});
