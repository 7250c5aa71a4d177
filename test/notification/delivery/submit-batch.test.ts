/**
 * Batches answer what they committed (issue 23): `submitBatch` is all or nothing. Before, the batch
 * was committed and then one reused idempotency key threw ALREADY_EXISTS for the whole call: the
 * caller got no ids, the worker was not woken, and a caller retrying with new keys sent everything
 * twice. Now a key reused for other content, or any store error (here: the follow-up SELECT that
 * reads the records of repeated keys), records nothing. Memory store and real PostgreSQL.
 */
import type { Knex } from 'knex';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import { InMemoryDeliveryStore } from '../../../services/notification/delivery/memory-store';
import type { DeliveryStore } from '../../../services/notification/delivery/store';
import type { SubmitInput } from '../../../services/notification/delivery/pipeline';
import { notificationMigrations } from '../../../services/notification/migrations';
import { AlreadyExistsError } from '../../../shared/errors';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { createTestDatabase } from '../../support/database';
import { ScriptedDriver, buildPipeline, newBackend } from './support';

let db: { url: string; drop(): Promise<void> };
let knex: Knex;

beforeAll(async () => {
  db = await createTestDatabase('submitbatch');
  knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 4 }, silentLogger());
  await runMigrations(knex, notificationMigrations);
});

afterAll(async () => {
  await knex?.destroy();
  await db?.drop();
});

/**
 * `knex` whose transactions fail the statement that reads the records of repeated keys (the
 * follow-up SELECT of a batch insert), as a dropped connection or a statement timeout would.
 */
function failingFollowUp(real: Knex): Knex {
  const trxProxy = (trx: Knex.Transaction) =>
    new Proxy(trx, {
      get(target, prop, receiver) {
        if (prop !== 'raw') return Reflect.get(target, prop, receiver) as unknown;
        return (sql: string, bindings: unknown) => {
          if (sql.includes('JOIN delivery_keys'))
            throw new Error('connection lost during the follow-up SELECT');
          return target.raw(sql, bindings as Knex.RawBinding[]);
        };
      },
    });
  return new Proxy(real, {
    get(target, prop, receiver) {
      if (prop !== 'transaction') return Reflect.get(target, prop, receiver) as unknown;
      return (fn: (trx: Knex.Transaction) => Promise<unknown>) =>
        target.transaction((trx) => fn(trxProxy(trx)));
    },
  });
}

const stores: [string, () => DeliveryStore][] = [
  ['memory', () => new InMemoryDeliveryStore()],
  ['PostgreSQL', () => new DatabaseDeliveryStore(knex)],
];

describe.each(stores)('submitBatch on the %s store', (_name, makeStore) => {
  const setup = () => {
    const driver = new ScriptedDriver(newBackend('push'), 'push');
    const store = makeStore();
    const { pipeline } = buildPipeline(store, [driver]);
    const item = (token: string, key: string | undefined, text = 'hello'): SubmitInput => ({
      channel: 'push',
      recipient: token,
      payload: { token, text },
      scope: `s-${driver.name}`,
      idempotencyKey: key,
    });
    const count = async () => (await pipeline.list({ backend: driver.name }, '', 500)).deliveries.length;
    return { driver, store, pipeline, item, count };
  };

  it('when one item reuses an idempotency key for other content, the call is ALREADY_EXISTS and nothing of the batch is recorded', async () => {
    const { pipeline, item, count } = setup();
    await pipeline.submitBatch([item('tok-a', 'k1'), item('tok-b', 'k2')]);
    expect(await count()).toBe(2);

    await expect(
      pipeline.submitBatch([
        item('tok-c', 'k3'),
        item('tok-a', 'k1', 'other text'),
        item('tok-d', undefined),
      ]),
    ).rejects.toBeInstanceOf(AlreadyExistsError);
    expect(await count()).toBe(2);
    // The new key was not taken: the caller can send the good items again, once each.
    const [c] = await pipeline.submitBatch([item('tok-c', 'k3')]);
    expect(c!.created).toBe(true);
    expect(await count()).toBe(3);
  });

  it('when two items of one batch share a key with different content, nothing is recorded', async () => {
    const { pipeline, item, count } = setup();
    await expect(
      pipeline.submitBatch([item('tok-a', 'k1'), item('tok-a', 'k1', 'changed')]),
    ).rejects.toBeInstanceOf(AlreadyExistsError);
    expect(await count()).toBe(0);
  });

  it('when the same batch is sent again, every item answers its first record and nothing new is recorded', async () => {
    const { pipeline, item, count } = setup();
    const first = await pipeline.submitBatch([item('tok-a', 'k1'), item('tok-b', 'k2')]);
    const again = await pipeline.submitBatch([item('tok-a', 'k1'), item('tok-b', 'k2')]);
    expect(again.map((r) => [r.delivery.id, r.created])).toEqual(first.map((r) => [r.delivery.id, false]));
    expect(await count()).toBe(2);
  });
});

test('on PostgreSQL, when the follow-up SELECT for repeated keys fails, the call fails and nothing of the batch is recorded', async () => {
  const driver = new ScriptedDriver(newBackend('push'), 'push');
  const item = (token: string, key: string): SubmitInput => ({
    channel: 'push',
    recipient: token,
    payload: { token },
    scope: 's-follow-up',
    idempotencyKey: key,
  });
  const { pipeline } = buildPipeline(new DatabaseDeliveryStore(knex), [driver]);
  await pipeline.submitBatch([item('tok-a', `${driver.name}-1`)]);
  const failing = buildPipeline(new DatabaseDeliveryStore(failingFollowUp(knex)), [driver]).pipeline;

  // A repeated key (needs the follow-up SELECT) next to a new one.
  await expect(
    failing.submitBatch([item('tok-a', `${driver.name}-1`), item('tok-b', `${driver.name}-2`)]),
  ).rejects.toThrow('connection lost during the follow-up SELECT');
  const listed = await pipeline.list({ backend: driver.name }, '', 500);
  expect(listed.deliveries).toHaveLength(1);
  const [b] = await pipeline.submitBatch([item('tok-b', `${driver.name}-2`)]);
  expect(b!.created).toBe(true);
});
