/**
 * SMS per second through SendSms over gRPC (64 calls in flight, memory store), counted when the local
 * Twilio-style API has accepted every message, against raw `fetch` posting the same form with the
 * same Basic auth to the same server with 64 in flight. Rounds alternate; the ratio is printed
 * (target >= 0.7).
 */
import { NotificationService } from '../../shared/gen/svc/notification/v1/notification_pb';
import { silentLogger } from '../../shared/logging/logger';
import { loadNotificationConfig } from '../../services/notification/config';
import { createNotificationApp } from '../../services/notification/app';
import { grpcClient, unary } from '../support/grpc-clients';
import {
  ACCOUNT_SID,
  AUTH_TOKEN,
  gatewayConfig,
  startTwilioPeer,
} from '../notification/channels/sms/twilio-peer';
import { compareThroughput, type BenchRow } from './measure';

const IN_FLIGHT = 64;
const PER_ROUND = 2000;

/** Runs `call` PER_ROUND times with IN_FLIGHT in flight. */
async function run(call: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < PER_ROUND) await call(next++);
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
}

/** The SMS bench rows. */
export async function runSmsBench(): Promise<BenchRow[]> {
  const peer = await startTwilioPeer({ record: false });
  const config = loadNotificationConfig(
    {
      server: { host: '127.0.0.1', grpc_port: 0, http_port: 0, shutdown_drain_ms: 0 },
      inbox: { store_backend: 'memory' },
      delivery: { store_backend: 'memory', concurrency: IN_FLIGHT, poll_interval_ms: 50 },
      sms_backends: [{ name: 'bench', sms_gateway: gatewayConfig(peer, { max_connections: IN_FLIGHT }) }],
    },
    { env: {}, file: null },
  );
  const app = await createNotificationApp(config, silentLogger());
  const ports = await app.start();
  const client = grpcClient(NotificationService, `127.0.0.1:${ports.grpc}`);
  const url = `${peer.baseUrl}/2010-04-01/Accounts/${ACCOUNT_SID}/Messages.json`;
  const authorization = `Basic ${Buffer.from(`${ACCOUNT_SID}:${AUTH_TOKEN}`).toString('base64')}`;

  /** Messages the peer accepted per second, from the first call until it has them all. */
  const measure = async (send: (i: number) => Promise<unknown>): Promise<number> => {
    const target = peer.accepted + PER_ROUND;
    const started = performance.now();
    await run(send);
    while (peer.accepted < target) {
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    return PER_ROUND / ((performance.now() - started) / 1000);
  };

  try {
    const result = await compareThroughput(
      () =>
        measure((i) =>
          unary(client, 'sendSms', { to: `+1555${String(1_000_000 + i)}`, body: `bench message ${i}` }),
        ),
      () =>
        measure(async (i) => {
          const res = await fetch(url, {
            method: 'POST',
            headers: { authorization, 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({
              To: `+1555${String(1_000_000 + i)}`,
              From: '+15550001111',
              Body: `bench message ${i}`,
            }).toString(),
          });
          await res.arrayBuffer();
        }),
    );
    return [
      {
        name: `SendSms over gRPC (${IN_FLIGHT} in flight, memory store) vs raw fetch to the same API`,
        ...result,
        target: '>= 0.7',
        unit: 'SMS/s',
      },
    ];
  } finally {
    client.close();
    await app.stop();
    await peer.close();
  }
}
