/**
 * The quick start as a user meets it: the real notification process on its embedded defaults
 * (PGlite in ./data/notification under its working directory, no store forced), restarted.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InboxService } from '../../shared/gen/svc/notification/v1/inbox_pb';
import { startServiceProcess } from '../support/service-process';
import { grpcClient, unary } from '../support/grpc-clients';

type WireMessage = { id: string; title: string; read: boolean };

// initdb in WASM takes 6-7 s alone and far longer on a loaded machine; a bound, not a speed check.
const PGLITE_START_MS = 180_000;

let cwd: string;

beforeAll(() => {
  // An empty working directory: no config/application.yaml, so every setting is a default.
  cwd = mkdtempSync(join(tmpdir(), 'notification-quickstart-'));
});

afterAll(() => {
  rmSync(cwd, { recursive: true, force: true });
});

test(
  'on PGlite, inbox messages sent over gRPC are still there after a restart',
  async () => {
    // The first start creates the data directory (initdb in WASM takes several seconds).
    const first = await startServiceProcess('notification', {}, { cwd, startTimeoutMs: PGLITE_START_MS });
    let sentIds: string[];
    try {
      expect(first.logs.join('\n')).toMatch(/opening embedded PGlite/);
      const client = grpcClient(InboxService, `127.0.0.1:${first.grpcPort}`);
      try {
        sentIds = [];
        for (const title of ['first', 'second']) {
          const { response } = await unary<{ message: WireMessage }>(client, 'send', {
            userId: 'quickstart-user',
            title,
            body: `${title} body`,
          });
          sentIds.push(response.message.id);
        }
        await unary(client, 'markRead', { userId: 'quickstart-user', messageId: sentIds[0] });
      } finally {
        client.close();
      }
    } finally {
      expect(await first.stop('SIGTERM')).toBe(0);
    }
    expect(existsSync(join(cwd, 'data', 'notification', 'PG_VERSION'))).toBe(true);

    const second = await startServiceProcess('notification', {}, { cwd, startTimeoutMs: PGLITE_START_MS });
    try {
      const client = grpcClient(InboxService, `127.0.0.1:${second.grpcPort}`);
      try {
        const { response } = await unary<{ messages: WireMessage[]; unreadCount: number }>(
          client,
          'getInbox',
          {
            userId: 'quickstart-user',
          },
        );
        expect(response.messages.map((m) => [m.id, m.title, m.read])).toEqual([
          [sentIds[1], 'second', false],
          [sentIds[0], 'first', true],
        ]);
        expect(response.unreadCount).toBe(1);
      } finally {
        client.close();
      }
      expect(second.logs.join('\n')).toMatch(/opening embedded PGlite/);
    } finally {
      expect(await second.stop('SIGTERM')).toBe(0);
    }
  },
  2 * PGLITE_START_MS + 60_000,
);

test(
  "the monitor on its defaults keeps its own embedded database in ./data/monitor, beside the notification service's",
  async () => {
    // Runs after the test above in the same working directory, as `npm start` runs both there.
    const monitor = await startServiceProcess('monitor', {}, { cwd, startTimeoutMs: PGLITE_START_MS });
    try {
      expect(monitor.logs.join('\n')).toMatch(/opening embedded PGlite/);
      expect(monitor.logs.join('\n')).toContain(join('data', 'monitor'));
    } finally {
      expect(await monitor.stop('SIGTERM')).toBe(0);
    }
    expect(existsSync(join(cwd, 'data', 'monitor', 'PG_VERSION'))).toBe(true);
    expect(existsSync(join(cwd, 'data', 'notification', 'PG_VERSION'))).toBe(true);
  },
  PGLITE_START_MS + 60_000,
);
