/**
 * Notify (issue 25). (1) Notify over gRPC to one user with inbox, email and SMS (32 calls in flight,
 * memory stores) against the same three calls made directly over gRPC (inbox Send, SendEmail,
 * SendSms, the three at once per notification), each counted when the local SMTP server and the
 * Twilio-style API have accepted every message; rounds alternate (target >= 0.8). (2) A topic of
 * 10,000 users (inbox only): notifications per second from the Notify call until GetNotification says
 * FANNED_OUT, against 10,000 inbox sends through the same InboxService in-process (reported).
 * (4) The same topic on PostgreSQL (issue 30; every store on the database): notifications per second
 * until FANNED_OUT, against 10,000 rows inserted into a copy of inbox_messages by raw `pg` (32 in
 * flight) in the same run (reported), with CPU-ms per notification of the bench process and PostgreSQL.
 * (3) Scheduling (issue 26): 10,000 notifications (inbox only) scheduled for the same second, the
 * time from that second until every one went out (the due runner as configured: polling every
 * second, claims of 100), against 10,000 immediate Notify calls in the same run (both in-process,
 * 32 in flight; reported, ratio printed).
 *
 * Everything is the real service: the user directory, the preference book and the template renderer
 * (memory stores), users and topic members upserted through the directory, templates through
 * TemplateService.
 */
import { InboxService } from '../../shared/gen/svc/notification/v1/inbox_pb';
import { NotificationService } from '../../shared/gen/svc/notification/v1/notification_pb';
import { NotificationStatus, NotifyService } from '../../shared/gen/svc/notification/v1/notify_pb';
import { silentLogger } from '../../shared/logging/logger';
import { loadNotificationConfig } from '../../services/notification/config';
import { createNotificationApp } from '../../services/notification/app';
import { grpcClient, unary } from '../support/grpc-clients';
import { smtpMailerConfig } from '../support/notification-app';
import { createSmtpPeer } from '../support/smtp-peer';
import { gatewayConfig, startTwilioPeer } from '../notification/channels/sms/twilio-peer';
import { TemplateChannel, TemplateService } from '../../shared/gen/svc/notification/v1/templates_pb';
import { compareThroughput, type BenchRow } from './measure';
import { Pool } from 'pg';
import { randomUUID } from 'node:crypto';
import { startCluster } from '../support/postgres-cluster';
import { cpuMark, postmasterPid, processTreeSource, selfSource } from './cpu-accounting';

const IN_FLIGHT = 32;
const PER_ROUND = 600;
const TOPIC_SIZE = 10_000;
/** Users the one-user calls rotate over (more than all rounds of both sides make calls). */
const CALL_USERS = 10 * PER_ROUND;

async function run(n: number, call: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < n) await call(next++);
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
}

/**
 * A topic of TOPIC_SIZE users (inbox only) on PostgreSQL, every store on the database, against the
 * same number of rows inserted by raw `pg` into a copy of inbox_messages (reported).
 */
export async function topicOnPostgres(): Promise<BenchRow> {
  const cluster = process.env.TEST_DATABASE_URL ? undefined : await startCluster();
  const url = process.env.TEST_DATABASE_URL ?? cluster!.url;
  const config = loadNotificationConfig(
    {
      server: { host: '127.0.0.1', grpc_port: 0, http_port: 0, shutdown_drain_ms: 0 },
      database: { url },
      inbox: { store_backend: 'database' },
      delivery: { store_backend: 'database', concurrency: IN_FLIGHT, poll_interval_ms: 50 },
      notify: { categories: [{ name: 'news', channels: ['inbox'] }], topic_page_size: 500 },
    } as Parameters<typeof loadNotificationConfig>[0],
    { env: {}, file: null },
  );
  const app = await createNotificationApp(config, silentLogger());
  const ports = await app.start();
  const templates = grpcClient(TemplateService, `127.0.0.1:${ports.grpc}`);
  const pool = new Pool({ connectionString: url, max: 8 });
  try {
    const topic = `weekly-${randomUUID().slice(0, 8)}`;
    const members = Array.from({ length: TOPIC_SIZE }, (_, i) => `pg-member-${String(i).padStart(6, '0')}`);
    await run(TOPIC_SIZE, (i) =>
      app.users.upsertUser({
        userId: members[i]!,
        emails: [],
        phones: [],
        locale: '',
        timeZone: '',
        attributes: {},
      }),
    );
    for (let i = 0; i < members.length; i += 1000)
      await app.users.subscribeTopic(topic, members.slice(i, i + 1000));
    await unary(templates, 'upsertTemplate', {
      category: 'news',
      channel: TemplateChannel.INBOX,
      locale: 'en',
      content: { title: 'News {{ data.week }} 📦', body: 'هذا الأسبوع 本周' },
    });
    const sources = [selfSource('bench process'), processTreeSource('postgres', await postmasterPid(url))];
    const mark = cpuMark(sources);
    const started = performance.now();
    const { notification } = await app.notifier.notify(
      {
        userId: '',
        topic,
        category: 'news',
        data: { week: '48' },
        overrides: [],
        priority: 'normal',
        idempotencyKey: '',
      },
      'bench',
    );
    while ((await app.notifier.get(notification.id, 'bench')).status !== 'fanned_out') {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const rate = TOPIC_SIZE / ((performance.now() - started) / 1000);
    const spent = mark.spent();
    await pool.query('CREATE TABLE IF NOT EXISTS bench_raw_inbox (LIKE inbox_messages INCLUDING ALL)');
    const rawStarted = performance.now();
    await run(TOPIC_SIZE, (i) =>
      pool.query(
        'INSERT INTO bench_raw_inbox (id, user_id, title, body, metadata, created_at) VALUES ($1, $2, $3, $4, $5, $6)',
        [randomUUID(), members[i], 'News 48 📦', 'هذا الأسبوع 本周', '{}', new Date()],
      ),
    );
    const rawRate = TOPIC_SIZE / ((performance.now() - rawStarted) / 1000);
    return {
      name: `Topic fan-out of ${TOPIC_SIZE} users (inbox, pages of 500, PostgreSQL) vs ${TOPIC_SIZE} raw pg inbox INSERTs (${IN_FLIGHT} in flight)`,
      value: rate,
      baseline: rawRate,
      ratio: rate / rawRate,
      target: 'reported',
      unit: 'notifications/s',
      detail: [
        `fan-out: ${Object.entries(spent)
          .map(([name, ms]) => `${name} ${(ms / TOPIC_SIZE).toFixed(3)}`)
          .join(' + ')} CPU-ms/notification`,
      ],
    };
  } finally {
    templates.close();
    await pool.end();
    await app.stop();
    cluster?.stop();
  }
}

/** The notify bench rows. */
export async function runNotifyBench(): Promise<BenchRow[]> {
  // Counting by Message-ID only: the peer leaves the CPU to what is measured.
  const smtp = createSmtpPeer({ parse: false });
  await smtp.start();
  const twilio = await startTwilioPeer({ record: false });
  let nextUser = 0;
  const callUser = () => `bench-${nextUser++ % CALL_USERS}`;
  const members = Array.from({ length: TOPIC_SIZE }, (_, i) => `member-${String(i).padStart(6, '0')}`);

  const config = loadNotificationConfig(
    {
      server: { host: '127.0.0.1', grpc_port: 0, http_port: 0, shutdown_drain_ms: 0 },
      inbox: { store_backend: 'memory' },
      delivery: { store_backend: 'memory', concurrency: IN_FLIGHT, poll_interval_ms: 50 },
      mailer: smtpMailerConfig(smtp.port),
      sms_backends: [{ name: 'bench', sms_gateway: gatewayConfig(twilio, { max_connections: IN_FLIGHT }) }],
      notify: {
        categories: [
          { name: 'alerts', channels: ['inbox', 'email', 'sms'], required: true },
          { name: 'news', channels: ['inbox'] },
        ],
        topic_page_size: 500,
      },
    } as Parameters<typeof loadNotificationConfig>[0],
    { env: {}, file: null },
  );
  const app = await createNotificationApp(config, silentLogger());
  const ports = await app.start();
  const address = `127.0.0.1:${ports.grpc}`;
  const notify = grpcClient(NotifyService, address);
  const inbox = grpcClient(InboxService, address);
  const notifications = grpcClient(NotificationService, address);
  const templates = grpcClient(TemplateService, address);

  const template = (category: string, channel: TemplateChannel, content: Record<string, string>) =>
    unary(templates, 'upsertTemplate', { category, channel, locale: 'en', content });
  await template('alerts', TemplateChannel.INBOX, { title: 'Order {{ data.order }}', body: 'Shipped 📦' });
  await template('alerts', TemplateChannel.EMAIL, { subject: 'Order {{ data.order }}', text: 'Shipped 📦' });
  await template('alerts', TemplateChannel.SMS, { text: 'Order {{ data.order }}: shipped 📦' });
  await template('news', TemplateChannel.INBOX, { title: 'News {{ data.week }}', body: 'This week' });
  const user = (userId: string, emails: string[] = [], phones: string[] = []) =>
    app.users.upsertUser({ userId, emails, phones, locale: '', timeZone: '', attributes: {} });
  // A user per call on both sides: the memory inbox counts a user's unread messages on every send, so
  // one user growing through the rounds would slow whichever side runs later.
  for (let k = 0; k < CALL_USERS; k++) await user(`bench-${k}`, ['bench@example.com'], ['+15550001234']);
  for (const userId of members) await user(userId);
  for (let i = 0; i < members.length; i += 1000) {
    await app.users.subscribeTopic('weekly', members.slice(i, i + 1000));
  }

  /** Notifications per second, from the first call until the peers have every email and SMS. */
  const measure = async (send: (i: number) => Promise<unknown>): Promise<number> => {
    const mails = smtp.acceptedCount + PER_ROUND;
    const sms = twilio.accepted + PER_ROUND;
    const started = performance.now();
    await run(PER_ROUND, send);
    while (smtp.acceptedCount < mails || twilio.accepted < sms) {
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    return PER_ROUND / ((performance.now() - started) / 1000);
  };

  try {
    const one = await compareThroughput(
      () =>
        measure((i) =>
          unary(notify, 'notify', { userId: callUser(), category: 'alerts', data: { order: `A-${i}` } }),
        ),
      () =>
        measure((i) =>
          Promise.all([
            unary(inbox, 'send', { userId: callUser(), title: `Order A-${i}`, body: 'Shipped 📦' }),
            unary(notifications, 'sendEmail', {
              to: ['bench@example.com'],
              subject: `Order A-${i}`,
              text: 'Shipped 📦',
            }),
            unary(notifications, 'sendSms', { to: '+15550001234', body: `Order A-${i}: shipped 📦` }),
          ]),
        ),
    );

    // The topic: Notify answers at once; the job fans out in pages of 500.
    const topicStarted = performance.now();
    const { response } = await unary<{ notification: { id: string } }>(notify, 'notify', {
      topic: 'weekly',
      category: 'news',
      data: { week: '48' },
    });
    for (;;) {
      const got = await unary<{ notification: { status: number } }>(notify, 'getNotification', {
        id: response.notification.id,
      });
      if (got.response.notification.status === NotificationStatus.FANNED_OUT) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const topicRate = TOPIC_SIZE / ((performance.now() - topicStarted) / 1000);
    const inboxStarted = performance.now();
    await run(TOPIC_SIZE, (i) =>
      app.inbox.send({ userId: members[i]!, title: 'News 48', body: 'This week' }),
    );
    const inboxRate = TOPIC_SIZE / ((performance.now() - inboxStarted) / 1000);

    // Scheduling: immediate Notify calls first (their rate sizes the lead time of the scheduled ones).
    const notifyOne = (userId: string, extra: { sendAt?: Date } = {}) =>
      app.notifier.notify(
        {
          userId,
          topic: '',
          category: 'news',
          data: { week: '49' },
          overrides: [],
          priority: 'normal',
          idempotencyKey: '',
          ...extra,
        },
        'bench',
      );
    const immediateStarted = performance.now();
    await run(TOPIC_SIZE, (i) => notifyOne(members[i]!));
    const immediateSeconds = (performance.now() - immediateStarted) / 1000;
    const immediateRate = TOPIC_SIZE / immediateSeconds;
    // All due in the same second, far enough ahead that every call is recorded before it.
    const dueAt = new Date(Math.ceil((Date.now() + 2000 + 2 * immediateSeconds * 1000) / 1000) * 1000);
    const pending = new Set<string>();
    await run(TOPIC_SIZE, async (i) => {
      const { notification } = await notifyOne(members[i]!, { sendAt: dueAt });
      if (notification.status !== 'scheduled') throw new Error('scheduled too late for the bench');
      pending.add(notification.id);
    });
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, dueAt.getTime() - Date.now())));
    const scheduledStarted = performance.now();
    while (pending.size > 0) {
      for (const id of [...pending]) {
        if ((await app.notifier.get(id, 'bench')).status === 'fanned_out') pending.delete(id);
      }
      if (pending.size > 0) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const scheduledRate = TOPIC_SIZE / ((performance.now() - scheduledStarted) / 1000);
    const topicPg = await topicOnPostgres();

    return [
      {
        name: 'Notify (inbox + email + SMS, one user, 32 in flight, memory) vs inbox Send + SendEmail + SendSms made directly',
        ...one,
        target: '>= 0.8',
        unit: 'notifications/s',
      },
      {
        name: `Topic fan-out of ${TOPIC_SIZE} users (inbox, pages of 500, memory) vs the same inbox sends in-process`,
        value: topicRate,
        baseline: inboxRate,
        ratio: topicRate / inboxRate,
        target: 'reported',
        unit: 'notifications/s',
      },
      topicPg,
      {
        name: `${TOPIC_SIZE} notifications due in the same second (inbox, memory, the due runner polling every second) vs ${TOPIC_SIZE} immediate Notify calls, in-process`,
        value: scheduledRate,
        baseline: immediateRate,
        ratio: scheduledRate / immediateRate,
        target: 'reported',
        unit: 'notifications/s',
      },
    ];
  } finally {
    notify.close();
    inbox.close();
    notifications.close();
    templates.close();
    await app.stop();
    await smtp.close();
    await twilio.close();
  }
}
