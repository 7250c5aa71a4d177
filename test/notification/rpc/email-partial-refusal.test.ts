/**
 * A relay that refuses some recipients at RCPT and takes the message for the others (issue 23,
 * "Truthful records"): the message went out, so the delivery is SENT, and the stored record says so
 * truthfully: the reason (`accepted for 2 recipients, refused for 1`) and the refused addresses,
 * masked. Read back with GetDelivery over gRPC, from the memory store and from real PostgreSQL,
 * against the real smtp-server peer.
 */
import { AttemptOutcome, DeliveryStatus } from '../../../shared/gen/svc/notification/v1/notification_pb';
import {
  FAST_DELIVERY,
  smtpMailerConfig,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../support/notification-app';
import { createTestDatabase } from '../../support/database';
import { unary } from '../../support/grpc-clients';
import { startSmtpPeer, type SmtpPeer } from '../../support/smtp-peer';
import { finalDelivery } from '../../support/final-delivery';

const TOKEN = 'token-refusal-0123456789abcdef';
const metadata = { authorization: `Bearer ${TOKEN}` };

interface WireDelivery {
  status: DeliveryStatus;
  lastError: string;
  recipient: string;
  refusedRecipients: string[];
  attemptLog: { outcome: AttemptOutcome; error: string; refusedRecipients: string[] }[];
}

function final(n: RunningNotificationApp, id: string): Promise<WireDelivery> {
  const read = async () =>
    (await unary<{ delivery: WireDelivery }>(n.notificationGrpc, 'getDelivery', { id }, { metadata }))
      .response.delivery;
  return finalDelivery(read, id, { tries: 1000, stepMs: 20 });
}

describe.each([
  ['the memory store', 'memory'],
  ['the database store on real PostgreSQL', 'postgres'],
] as const)('SMTP partial refusal on %s', (_label, store) => {
  let peer: SmtpPeer;
  let n: RunningNotificationApp;
  let db: { url: string; drop(): Promise<void> } | undefined;

  beforeAll(async () => {
    peer = await startSmtpPeer();
    if (store === 'postgres') db = await createTestDatabase('refusal');
    n = await startNotificationApp({
      server: { api_tokens: [TOKEN] },
      ...(db ? { database: { url: db.url } } : {}),
      delivery: { ...FAST_DELIVERY, store_backend: store === 'postgres' ? 'database' : 'memory' },
      mailer: smtpMailerConfig(peer.port),
    });
  });

  afterAll(async () => {
    await n?.close();
    await peer?.close();
    await db?.drop();
  });

  test('refused for 1 of 3: SENT, and the record keeps the reason and the refused address, masked', async () => {
    peer.refuse.set('gone@example.org', [550, '5.1.1 No such user here']);
    const { response } = await unary<{ deliveryId: string }>(
      n.notificationGrpc,
      'sendEmail',
      {
        to: ['ann@example.com', 'gone@example.org'],
        cc: ['carl@example.net'],
        subject: 'Quarterly report',
        text: 'Attached.',
      },
      { metadata },
    );
    await peer.whenAccepted(1);
    const d = await final(n, response.deliveryId);

    expect(d.status).toBe(DeliveryStatus.SENT);
    expect(peer.received[0]!.recipients).toEqual(['ann@example.com', 'carl@example.net']);
    expect(d.attemptLog).toHaveLength(1);
    expect(d.attemptLog[0]!.outcome).toBe(AttemptOutcome.SENT);
    expect(d.attemptLog[0]!.error).toBe('accepted for 2 recipients, refused for 1');
    expect(d.lastError).toBe('accepted for 2 recipients, refused for 1');
    expect(d.attemptLog[0]!.refusedRecipients).toEqual(['g***@example.org']);
    expect(d.refusedRecipients).toEqual(['g***@example.org']);
    // Masked, never the address itself.
    expect(JSON.stringify(d, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))).not.toContain(
      'gone@example.org',
    );
  });

  test('every recipient accepted: SENT with no reason and no refused recipients', async () => {
    peer.refuse.clear();
    const { response } = await unary<{ deliveryId: string }>(
      n.notificationGrpc,
      'sendEmail',
      { to: ['dora@example.com'], subject: 'Hello', text: 'Hi.' },
      { metadata },
    );
    const d = await final(n, response.deliveryId);
    expect(d.status).toBe(DeliveryStatus.SENT);
    expect(d.lastError).toBe('');
    expect(d.attemptLog[0]!.error).toBe('');
    expect(d.refusedRecipients).toEqual([]);
  });
});
