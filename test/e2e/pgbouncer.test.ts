/**
 * Issue 30: two notification replicas whose pool goes through pgbouncer in transaction mode (each
 * transaction on whichever server connection is free), with `database.session_url` pointing straight
 * at PostgreSQL for what needs one session: LISTEN (a watcher on A hears B's sends), the migration
 * lock (both replicas start at once on an empty database) and job leases. Every SMS is sent exactly
 * once, and the pool's traffic did go through the pooler (its own statistics say so).
 */
import type * as grpc from '@grpc/grpc-js';
import { Client } from 'pg';
import {
  DeliveryEventType,
  DeliveryStatus,
  NotificationService,
} from '../../shared/gen/svc/notification/v1/notification_pb';
import { createTestDatabase } from '../support/database';
import { grpcClient, unary, type GenericClient } from '../support/grpc-clients';
import { startPgbouncer, type Pgbouncer } from '../support/pgbouncer';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';
import { waitFor } from '../support/wait';
import { gatewayConfig, startTwilioPeer, type TwilioPeer } from '../notification/channels/sms/twilio-peer';

const SENDS = 30;

let db: { url: string; drop(): Promise<void> };
let bouncer: Pgbouncer | undefined;
let bouncerPort: number;
let peer: TwilioPeer;
let a: ServiceProcess;
let b: ServiceProcess;
let onA: GenericClient;
let onB: GenericClient;

beforeAll(async () => {
  db = await createTestDatabase('bouncer');
  // Fewer server connections than the two pools together: transactions must share them.
  bouncer = await startPgbouncer(db.url, 4);
  bouncerPort = bouncer.port;
  const pooled = new URL(bouncer.pooledUrl);
  peer = await startTwilioPeer();
  const env = {
    SVC_NOTIFICATION__DATABASE__URL: pooled.toString(),
    SVC_NOTIFICATION__DATABASE__SESSION_URL: db.url,
    SVC_NOTIFICATION__DATABASE__POOL_MAX: '6',
    SVC_NOTIFICATION__SMS_BACKENDS: JSON.stringify([{ name: 'twilio', sms_gateway: gatewayConfig(peer) }]),
    SVC_NOTIFICATION__DELIVERY__POLL_INTERVAL_MS: '100',
  };
  // At once, on an empty database: the migration lock (on the session URL) makes one wait.
  [a, b] = await Promise.all([
    startServiceProcess('notification', env),
    startServiceProcess('notification', env),
  ]);
  onA = grpcClient(NotificationService, `127.0.0.1:${a.grpcPort}`);
  onB = grpcClient(NotificationService, `127.0.0.1:${b.grpcPort}`);
}, 180_000);

afterAll(async () => {
  onA?.close();
  onB?.close();
  await Promise.all([a?.stop(), b?.stop()]);
  await peer?.close();
  await bouncer?.stop();
  await db?.drop();
});

interface Frame {
  type: DeliveryEventType;
  deliveryId: string;
  status: DeliveryStatus;
}

test('every SMS sent through either replica behind pgbouncer is sent exactly once, and a watcher on A hears B', async () => {
  const call = (onA.watchDeliveries as (r: unknown) => grpc.ClientReadableStream<Frame>).call(onA, {});
  const frames: Frame[] = [];
  call.on('data', (f: Frame) => frames.push(f));
  call.on('error', () => undefined);
  await waitFor(() => frames.length >= 1, 'live on A', 30_000);

  const ids: string[] = [];
  for (let i = 0; i < SENDS; i++) {
    const client = i % 2 === 0 ? onA : onB;
    const { response } = await unary<{ deliveryId: string }>(client, 'sendSms', {
      to: `+1555123${String(i).padStart(4, '0')}`,
      body: `bouncer ${i} 📦`,
    });
    ids.push(response.deliveryId);
  }
  const sentOnA = () =>
    new Set(
      frames
        .filter((f) => f.type === DeliveryEventType.CHANGE && f.status === DeliveryStatus.SENT)
        .map((f) => f.deliveryId),
    );
  // B's sends reach A's watcher only through NOTIFY on A's LISTEN connection (the session URL).
  await waitFor(() => sentOnA().size === SENDS, 'every SENT on A', 60_000);
  call.cancel();
  expect(sentOnA()).toEqual(new Set(ids));

  const bodies = peer.requests.map((r) => r.form.Body);
  expect(bodies.filter((x) => x?.startsWith('bouncer ')).sort()).toEqual(
    Array.from({ length: SENDS }, (_, i) => `bouncer ${i} 📦`).sort(),
  );
});

test("the pool's transactions went through pgbouncer, sharing its few server connections", async () => {
  const admin = new Client({
    host: '127.0.0.1',
    port: bouncerPort,
    user: new URL(db.url).username,
    database: 'pgbouncer',
  });
  await admin.connect();
  try {
    const stats = (await admin.query('SHOW STATS')).rows as { database: string; total_xact_count: string }[];
    const ours = stats.find((s) => s.database === new URL(db.url).pathname.slice(1));
    expect(Number(ours?.total_xact_count ?? 0)).toBeGreaterThan(SENDS);
    const pools = (await admin.query('SHOW POOLS')).rows as {
      database: string;
      sv_active: string;
      sv_idle: string;
    }[];
    const pool = pools.find((p) => p.database === new URL(db.url).pathname.slice(1))!;
    expect(Number(pool.sv_active) + Number(pool.sv_idle)).toBeLessThanOrEqual(4);
  } finally {
    await admin.end();
  }
});
