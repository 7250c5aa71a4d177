/**
 * The cap ledger in the running service (PostgreSQL stores): DeleteUser forgets the user's counts
 * (the composition root registers the ledger's eraser with the user directory).
 */
import { createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { UserService } from '../../../../shared/gen/svc/notification/v1/users_pb';
import { createTestDatabase } from '../../../support/database';
import {
  FAST_DELIVERY,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../../support/notification-app';
import { capUserId } from './cap-ledger-contract';

let n: RunningNotificationApp;
let users: Client<typeof UserService>;
let dropDb: () => Promise<void>;

beforeAll(async () => {
  const db = await createTestDatabase('capsapp');
  dropDb = () => db.drop();
  n = await startNotificationApp({
    database: { url: db.url },
    delivery: { ...FAST_DELIVERY, store_backend: 'database' },
    notify: { caps: [{ channel: 'sms', limit: 3, per: '1h' }] },
  });
  users = createClient(UserService, createConnectTransport({ baseUrl: n.baseUrl, httpVersion: '1.1' }));
});

afterAll(async () => {
  await n?.close();
  await dropDb?.();
});

it('when a user is deleted, their cap counts go with them; other users keep theirs', async () => {
  const knex = n.app.storage!.knex;
  const [gone, kept] = [capUserId('gone'), capUserId('kept')];
  for (const id of [gone, kept]) {
    await users.upsertUser({ userId: id });
    await knex.raw(
      `INSERT INTO notify_cap_takes (user_id, channel, taken_at) VALUES (?, 'sms', now()), (?, 'push', now())`,
      [id, id],
    );
  }
  await users.deleteUser({ userId: gone });
  const left = async (id: string) => (await knex('notify_cap_takes').where({ user_id: id })).length;
  expect(await left(gone)).toBe(0);
  expect(await left(kept)).toBe(2);
});
