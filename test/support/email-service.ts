/**
 * Email through the real notification process, for the e2e tests: the environment that points its
 * mailer at an SMTP peer and its delivery records at PostgreSQL or PGlite, SendEmail over grpc-js
 * with bounded concurrency, and waits on the delivery records (ListDeliveries) rather than on time.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';

import { NotificationService } from '../../shared/gen/svc/notification/v1/notification_pb';
import { grpcClient, unary, type GenericClient } from './grpc-clients';
import { sendAll, type SendAllOptions } from './send-all';

/** Where the delivery records live. */
export type EmailStore = { url: string } | { dataDir: string } | 'memory';

/** The mailer backend every e2e test sends through. */
export const E2E_BACKEND = 'main';
/** Its sender. */
export const E2E_FROM = 'noreply@example.com';

/** What a test may set beyond the store: delivery keys and smtp driver keys, as in their config schemas. */
export interface EmailServiceOptions {
  /** `notification.delivery` keys (services/notification/delivery/config.ts). */
  delivery?: Record<string, string | number>;
  /** `notification.mailer.backends[0].smtp` keys on top of the test defaults. */
  smtp?: Record<string, string | number | boolean>;
}

/**
 * Environment for a notification process whose one (primary) mailer backend is `smtp` at
 * 127.0.0.1:`smtpPort`, pooled, and whose delivery records live in `store`.
 */
export function emailServiceEnv(
  smtpPort: number,
  store: EmailStore,
  options: EmailServiceOptions = {},
): Record<string, string> {
  const env: Record<string, string> = {
    SVC_NOTIFICATION__INBOX__STORE_BACKEND: 'memory',
    SVC_NOTIFICATION__MAILER__BACKENDS: JSON.stringify([
      {
        name: E2E_BACKEND,
        driver: 'smtp',
        from_email: E2E_FROM,
        smtp: {
          host: '127.0.0.1',
          port: smtpPort,
          pool: true,
          // A relay that is down must fail fast (connection refused is at once anyway).
          connection_timeout_ms: 2000,
          greeting_timeout_ms: 2000,
          socket_timeout_ms: 10000,
          ...options.smtp,
        },
      },
    ]),
  };
  if (store === 'memory') env.SVC_NOTIFICATION__DELIVERY__STORE_BACKEND = 'memory';
  else if ('url' in store) env.SVC_NOTIFICATION__DATABASE__URL = store.url;
  else env.SVC_NOTIFICATION__DATABASE__DATA_DIR = store.dataDir;
  for (const [key, value] of Object.entries(options.delivery ?? {})) {
    env[`SVC_NOTIFICATION__DELIVERY__${key.toUpperCase()}`] = String(value);
  }
  return env;
}

/** A grpc-js client of `svc.notification.v1.NotificationService` at `127.0.0.1:port`. */
export function notificationClient(grpcPort: number): GenericClient {
  return grpcClient(NotificationService, `127.0.0.1:${grpcPort}`);
}

/** What SendEmail answered for one email. */
export interface SentEmail {
  /** The subject we gave it: unique per email in these tests, so it names the email at the peer. */
  subject: string;
  deliveryId: string;
  messageId: string;
}

/** A small email with a unique subject. */
export function emailRequest(subject: string): Record<string, unknown> {
  return {
    to: [`user-${randomUUID().slice(0, 8)}@example.com`],
    subject,
    text: `Hello, this is ${subject}.`,
  };
}

/**
 * Sends `subjects.length` emails with `concurrency` SendEmail calls in flight, spread round-robin
 * over `clients`; resolves with every acknowledged send. A call that fails is thrown unless
 * `tolerateFailures` (the crash test kills the process mid-stream: its unanswered calls fail).
 */
export async function sendEmails(
  clients: GenericClient[],
  subjects: string[],
  concurrency: number,
  options: SendAllOptions<SentEmail> = {},
): Promise<{ acked: SentEmail[]; failed: number }> {
  return sendAll(
    subjects,
    concurrency,
    async (subject, i) => {
      const { response } = await unary<{ deliveryId: string; messageId: string }>(
        clients[i % clients.length]!,
        'sendEmail',
        emailRequest(subject),
        { deadlineMs: 30_000 },
      );
      return { subject, deliveryId: response.deliveryId, messageId: response.messageId };
    },
    options,
  );
}

/** DeliveryStatus values of the proto used here. */
export const STATUS = { PENDING: 1, RETRYING: 2, FAILED: 4, SENT: 5 } as const;

/** How many delivery records have `status` (pages of 500 through ListDeliveries). */
export async function countDeliveries(client: GenericClient, status: number): Promise<number> {
  let count = 0;
  let pageToken = '';
  do {
    const { response } = await unary<{ deliveries: unknown[]; nextPageToken: string }>(
      client,
      'listDeliveries',
      { pageSize: 500, pageToken, status },
      { deadlineMs: 30_000 },
    );
    count += response.deliveries.length;
    pageToken = response.nextPageToken;
  } while (pageToken);
  return count;
}

/**
 * Waits until no delivery is queued (pending or retrying) and `sent` records are SENT; polls the
 * service twice a second. Once a record is SENT nothing sends it again, so the peer's counts are
 * final after this.
 */
export async function waitForAllSent(client: GenericClient, sent: number, timeoutMs: number): Promise<void> {
  let done = false;
  const deadline = Date.now() + timeoutMs;
  while (!done) {
    const [pending, retrying, failed, ok] = await Promise.all(
      [STATUS.PENDING, STATUS.RETRYING, STATUS.FAILED, STATUS.SENT].map((s) => countDeliveries(client, s)),
    );
    const last = `pending ${pending}, retrying ${retrying}, failed ${failed}, sent ${ok} (want ${sent})`;
    if (failed > 0) throw new Error(`deliveries failed: ${last}`);
    done = pending === 0 && retrying === 0 && ok >= sent;
    if (!done) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for every delivery to be SENT: ${last}`);
      await sleep(500);
    }
  }
}

export { until } from './wait';
