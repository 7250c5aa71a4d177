/**
 * Wiring of the notification service (the composition root): opens the database once and runs
 * every migration, builds the areas on it, and serves them on the two ports. The start and stop
 * order is the shared ServiceLifecycle's. Used by main.ts and by tests that run the service
 * in-process.
 */
import { Registry } from 'prom-client';
import { MetricsCollector } from '../../shared/monitoring';
import { NotificationService } from '../../shared/gen/svc/notification/v1/notification_pb';
import { InboxService as InboxServiceDesc } from '../../shared/gen/svc/notification/v1/inbox_pb';
import { RpcServer, registration, serverOptionsFromConfig } from '../../shared/rpc/server';
import type { Logger } from '../../shared/logging/logger';
import { type BoundPorts, ServiceLifecycle } from '../../shared/runtime/lifecycle';
import { ServiceObservability } from '../../shared/runtime/observability';
import { startServiceMonitoring } from '../../shared/runtime/service-monitoring';
import { DatabaseJobLease, InProcessJobLease } from '../../shared/storage/periodic-job';
import { DELIVERY_MAINTENANCE_TABLE } from './migrations/20261123000350_delivery_maintenance';
import { type MigrationSet, openStorage, type Storage } from '../../shared/storage/database';
import type { NotificationConfig } from './config';
import { PgNotifyFeed } from '../../shared/streams/notify-feed';
import {
  INBOX_EVENTS_CHANNEL,
  INBOX_HEALTH_CHECK_NAME,
  InboxProvider,
  type InboxHub,
  type InboxService,
} from './inbox';
import { NOTIFICATION_MIGRATIONS_TABLE, notificationMigrations } from './migrations';
import { InboxRpc } from './rpc/inbox-rpc';
import { NotificationRpc } from './rpc/notification-rpc';
import { EmailSender, emailRequestBytes, withoutSuppressed } from './channels/email/email-sender';
import { MailerModule } from './channels/email/mailer-module';
import { type BackendRegistry, type RegisteredDriver, registryLookup } from './channels/backend-registry';
import { NotificationModule } from './channels/notification-module';
import type { SmsChannel } from './channels/sms/sms-channel';
import { SmsSender } from './channels/sms/sms-sender';
import { type PushChannel, PushSender } from './channels/push';
import {
  DatabaseDeliveryStore,
  DELIVERY_EVENTS_CHANNEL,
  DeliveryPipeline,
  type DeliveryStore,
  DeliveryWatchHub,
  DatabaseSuppressionStore,
  InMemoryDeliveryStore,
  InMemorySuppressionStore,
  Suppressions,
  watchHubOptions,
  withCircuitState,
} from './delivery';
import { ReceiptRecorder } from './delivery/receipt-recorder';
import { InMemoryInboundReplayStore } from './delivery/inbound-replay-memory-store';
import { DatabaseInboundReplayStore } from './delivery/inbound-replay-database-store';
import type { SuppressionSink } from './delivery/suppression-sink';
import { smsWebhookRoutes } from './channels/sms/sms-webhooks';
// Inbound SMS (issue 28): the log of replies and WatchInboundSms.
import { INBOUND_SMS_CHANNEL, type InboundSmsLog } from './channels/sms/inbound-log';
import { InMemoryInboundSmsLog } from './channels/sms/inbound-log-memory-store';
import { DatabaseInboundSmsLog } from './channels/sms/inbound-log-database-store';
import { InboundSmsRetention } from './channels/sms/inbound-log-retention';
import { InboundSmsWatchHub } from './channels/sms/inbound-watch-hub';
import { INBOUND_SMS_JOBS_TABLE } from './migrations/20261128800000_inbound_sms';
import { InboundSmsService as InboundSmsServiceDesc } from '../../shared/gen/svc/notification/v1/inbound_sms_pb';
import { InboundSmsRpc } from './rpc/inbound-sms-rpc';
import { INBOUND_SMS_METHOD_SCOPES } from './rpc/scopes';
import { emailWebhookRoutes } from './channels/email/event-webhook';
import { AdminAuth } from './admin/auth';
import { ADMIN_PATH_PREFIX, AdminGateway } from './admin/gateway';
import { ConsoleGateway } from './admin/console/console-gateway';
import { consoleSections } from './admin/console/sections';
import { SECURITY_HEADERS } from './admin/http';
// Templates (issue 25)
import { TemplateService as TemplateServiceDesc } from '../../shared/gen/svc/notification/v1/templates_pb';
import { TEMPLATE_METHOD_SCOPES } from './rpc/scopes';
import { TemplateRpc } from './rpc/template-rpc';
import { createTemplates, type TemplateRenderer } from './templates';
import { INBOX_METHOD_SCOPES, NOTIFICATION_METHOD_SCOPES, NOTIFY_METHOD_SCOPES } from './rpc/scopes';
import { NotifyService as NotifyServiceDesc } from '../../shared/gen/svc/notification/v1/notify_pb';
import { NotifyRpc } from './rpc/notify-rpc';
import { DatabaseNotificationStore } from './notify/database-store';
import { InMemoryNotificationStore } from './notify/memory-store';
import { createCapLedger } from './notify/caps';
import { createDigestBook } from './notify/digest';
import { quietHoursEnd } from './users/quiet-hours';
import { Notifier, type NotifierOptions } from './notify/notifier';
import { DueRunner } from './notify/schedule/due-runner';
import { TopicFanOut } from './notify/topic-fan-out';
import { NotificationRetention } from './notify/retention';
import { NOTIFY_MAINTENANCE_TABLE } from './migrations/20261127000200_notifications';
import type { NotifyPorts } from './notify/ports';
import { createMonitorReporter, receiptChannels } from './monitor';
import { UserService as UserServiceDesc } from '../../shared/gen/svc/notification/v1/users_pb';
import { DatabaseUserStore, InMemoryUserStore, UserDirectoryService } from './users';
import { UserRpc } from './rpc/user-rpc';
import { USER_METHOD_SCOPES } from './rpc/scopes';
import { allObservers, type DeliveryObserver } from './delivery';
import {
  DatabasePreferenceStore,
  InMemoryPreferenceStore,
  Preferences,
  UnsubscribeLinks,
  unsubscribeRoutes,
} from './users/preferences';

/** The running notification service's parts, for main.ts and tests. */
export interface NotificationApp {
  server: RpcServer;
  registry: Registry;
  /** The service's database, or undefined when no area stores anything in it (memory stores). */
  readonly storage: Storage | undefined;
  /** The inbox domain service. */
  readonly inbox: InboxService;
  /** The inbox event hub (open watches: `watcherCount`). */
  readonly inboxHub: InboxHub;
  /** The delivery pipeline (records, worker, retention) every channel sends through. */
  readonly deliveries: DeliveryPipeline;
  /** The WatchDeliveries hub (open watches: `watcherCount`). */
  readonly deliveryWatch: DeliveryWatchHub;
  /** The inbound SMS log (replies other than STOP / START) and its WatchInboundSms hub. */
  readonly inboundSms: { log: InboundSmsLog; hub: InboundSmsWatchHub; retention: InboundSmsRetention };
  /** The suppression list (one per channel), checked by every send; provider receipts add to it. */
  readonly suppressions: Suppressions;
  /** The mailer backends of `mailer.backends`. */
  readonly mailers: MailerModule;
  /** The SMS backends of `sms_backends`. */
  readonly sms: SmsChannel;
  /** The push backends of `push_backends`. */
  readonly push: PushChannel;
  /** The user directory (UserService; Notify reads it). */
  readonly users: UserDirectoryService;
  /** Notify: the fan-out and the notification records. */
  readonly notifier: Notifier;
  /** The topic fan-out runner of this process. */
  readonly topicFanOut: TopicFanOut;
  /** The runner of the notify area's due work (scheduled notifications, held lines, due digests). */
  readonly dueRunner: DueRunner;
  /** DeleteUser's erasers of the notify area and the delivery records (registered with the directory). */
  readonly userErasers: readonly ((userId: string) => Promise<void>)[];
  readonly auth: AdminAuth;
  /** Templates: the renderer Notify calls (templates area). */
  readonly templates: TemplateRenderer;
  start(): Promise<BoundPorts>;
  stop(): Promise<void>;
}

/** What tests may put in place of the service's own parts. */
export interface NotificationAppOptions {
  /** Where provider receipts suppress recipients; default: the service's suppression list. */
  suppressionSink?: SuppressionSink;
  /** The ports Notify reads (tests give fakes); default: the placeholders until the areas are merged. */
  notifyPorts?: NotifyPorts;
  /** The topic runner's lease and poll (tests of a restart shorten them). */
  topicFanOut?: { leaseMs?: number; pollMs?: number };
  /** The due-work runner's lease and poll (tests shorten them). */
  dueRunner?: { leaseMs?: number; pollMs?: number };
  /** The time rules' ports (issue 26; tests give fakes): caps, digests, quiet hours. Absent: none. */
  notifyTiming?: Pick<NotifierOptions, 'caps' | 'digests' | 'quietHoursEnd'>;
}

/** Every migration set of the service, in order: run at start and by `npm run migrate`. */
export const NOTIFICATION_MIGRATION_SETS: readonly MigrationSet[] = [
  { migrations: notificationMigrations, tableName: NOTIFICATION_MIGRATIONS_TABLE },
];

/** True when some area keeps its data in the database (so the service opens one). */
function needsDatabase(config: NotificationConfig): boolean {
  return (
    config.inbox.store_backend === 'database' ||
    config.delivery.store_backend === 'database' ||
    config.users.store_backend === 'database' ||
    config.templates.store_backend === 'database'
  );
}

/**
 * The largest SendEmail request either port accepts: `server.max_request_bytes`, raised when needed
 * so that a message of `mailer.max_message_bytes` fits, even as Connect JSON (attachments in base64).
 * A message over the mailer limit then gets the Mailable's clear INVALID_ARGUMENT, not a transport
 * error. Every other method keeps `server.max_request_bytes`.
 */
export function sendEmailRequestBytes(config: NotificationConfig): number {
  return Math.max(config.server.max_request_bytes, emailRequestBytes(config.mailer.max_message_bytes));
}

/** Builds the notification service from its config; nothing listens until start(). */
export async function createNotificationApp(
  config: NotificationConfig,
  logger: Logger,
  options: NotificationAppOptions = {},
): Promise<NotificationApp> {
  const registry = new Registry();
  // One collector: RPC, HTTP and service metrics all get the configured prefix, labels and buckets.
  const collector = new MetricsCollector({ registry, config: config.metrics });
  const lifecycle = new ServiceLifecycle(logger);
  try {
    // First, so the error tracker is closed last among the areas (after the server has stopped).
    const monitoring = await startServiceMonitoring(lifecycle, {
      collector,
      logger,
      errorTracking: config.error_tracking,
      environment: config.environment,
    });
    // The one storage root: opened once, every migration run, handed to the areas (the inbox and
    // the delivery store).
    const storage = needsDatabase(config)
      ? await lifecycle.storage('database', () =>
          openStorage(config.database, NOTIFICATION_MIGRATION_SETS, logger),
        )
      : undefined;

    // The one LISTEN connection of the live streams (inbox, deliveries), handed to their hubs: other
    // replicas can only exist on a PostgreSQL server (PGlite is one process). Closed with the pools.
    const listenUrl = storage?.listenUrl;
    const notifications = listenUrl
      ? await lifecycle.storage('stream-feed', async () => {
          const feed = new PgNotifyFeed({
            url: listenUrl,
            channels: [INBOX_EVENTS_CHANNEL, DELIVERY_EVENTS_CHANNEL, INBOUND_SMS_CHANNEL],
            logger,
            applicationName: 'notification-streams',
          });
          await feed.start();
          return feed;
        })
      : undefined;

    // Areas start here rather than in start(): the RPC layer and the gateway need their services.
    const inboxProvider = await lifecycle.area(
      'inbox',
      // each inbox part names its own `component`
      new InboxProvider({ config: config.inbox, storage, notifications, logger }),
    );
    const inbox = inboxProvider.service;

    const auth = new AdminAuth({ ...config.admin.auth, environment: config.environment });

    // Delivery: one pipeline for every channel; each channel resolves through its own backends.
    const mailers = MailerModule.configure(config.mailer, { logger });
    // The root area (spec: NotificationModule): the SMS and push backends.
    const channels = NotificationModule.configure(config, {
      logger,
      webhookBaseUrl: config.webhooks.public_base_url,
    });
    const { sms, push } = channels;
    // Every channel's backends, one registry each: the pipeline's lookup (a backend by channel and
    // name, the primary first for `delivery.routing`), one health check per backend and close all go
    // over this list, so a new channel is one more entry here (channels/README.md).
    const registries: readonly BackendRegistry<RegisteredDriver>[] = [mailers, sms, push];
    const deliveryStore: DeliveryStore =
      config.delivery.store_backend === 'database'
        ? new DatabaseDeliveryStore(storage!.knex, {
            logger,
            // Leases, due times and "now" from the database: replicas' clocks may differ.
            clock: 'database',
            maxPendingCreates: config.delivery.max_pending_submits,
            sequencerBatchSize: config.delivery.watch.sequencer_batch_size,
          })
        : new InMemoryDeliveryStore();
    // WatchDeliveries: fed by the store's event log; across replicas only on a PostgreSQL server.
    const deliveryWatch = new DeliveryWatchHub(
      deliveryStore,
      watchHubOptions(config.delivery.watch, {
        logger,
        notifications: config.delivery.store_backend === 'database' ? notifications : undefined,
      }),
    );
    lifecycle.worker('delivery-watch', deliveryWatch);
    // Reporting to the monitor (off without `monitor.grpc_address`): delivery outcomes become SLO
    // samples, unexpected errors CaptureException. Stopped after the delivery worker (an exporter),
    // so the last outcomes are still flushed.
    const reporter = createMonitorReporter(config.monitor, {
      registry,
      logger,
      // Channels with provider receipts get a `-receipts` SLO (default-slos.ts).
      receiptChannels: receiptChannels(config),
    });
    if (reporter) lifecycle.exporter('monitor-reporter', reporter);
    const onUnexpectedError =
      reporter === undefined
        ? monitoring.onUnexpectedError
        : (err: unknown) => {
            monitoring.onUnexpectedError?.(err);
            reporter.captureException(err);
          };
    // The suppression list lives with the delivery records (same store backend, same database).
    const suppressions = new Suppressions({
      store:
        config.delivery.store_backend === 'database'
          ? new DatabaseSuppressionStore(storage!.knex, {
              lookupTimeoutMs: config.delivery.suppression.lookup_timeout_ms,
            })
          : new InMemorySuppressionStore(config.delivery.suppression.memory_max_entries),
      lookupTimeoutMs: config.delivery.suppression.lookup_timeout_ms,
      registry,
      logger,
    });
    // Users (issue 25): the user directory. Its store follows delivery.store_backend unless set. Its
    // DeleteUser erases the inbox too (content of the event log included); a push token a provider
    // reports unregistered (APNs 410, FCM UNREGISTERED) leaves its user's devices.
    const users = new UserDirectoryService({
      store:
        (config.users.store_backend ?? config.delivery.store_backend) === 'database'
          ? new DatabaseUserStore(storage!.knex)
          : new InMemoryUserStore(config.users.memory_max_users, config.users.memory_max_memberships),
      config: config.users,
      maxTopicBatch: config.notify.max_topic_batch,
      pushBackends: config.push_backends.map((b) => b.name),
      logger,
    });
    users.onUserDeleted(async (userId) => void (await inbox.clearAll(userId)));
    // Preferences area (issue 25): the PreferenceBook (in the service's database when it has one)
    // and the unsubscribe links, built before the RPC server so UserRpc (GetPreferences /
    // UpdatePreferences) and Notify (isEnabled, unsubscribeHeaders) can take them; their routes are
    // added beside the admin gateway's.
    const preferences = new Preferences({
      store: storage ? new DatabasePreferenceStore(storage.knex) : new InMemoryPreferenceStore(),
      categories: config.notify.categories,
      // Preferences are keyed by user id like the inbox: an admin-page user the directory does not
      // know still has (default) preferences and may change them; DeleteUser erases them whether or
      // not the directory knew the id (its erasers always run).
      userExists: async () => true,
    });
    const unsubscribe = new UnsubscribeLinks({
      config: config.notify.unsubscribe,
      categories: config.notify.categories,
      logger,
    });
    users.onUserDeleted((userId) => preferences.eraseUser(userId));
    const forgetDeadTokens: DeliveryObserver = {
      onOutcome: (o) => {
        if (o.channel !== 'push' || o.failure !== 'recipient_unregistered' || o.recipient === undefined)
          return;
        users.forgetDeviceToken(o.recipient).catch((err: unknown) => {
          logger.warn({ err, deliveryId: o.deliveryId }, 'forgetting an unregistered device token failed');
        });
      },
    };
    const usersRegistration = registration(UserServiceDesc, new UserRpc(users, preferences, suppressions), {
      scopes: USER_METHOD_SCOPES,
    });

    const deliveries = new DeliveryPipeline({
      store: deliveryStore,
      suppression: suppressions,
      // The suppression rule leaves suppressed addresses out of an email at claim as at submit.
      withoutRecipients: { email: withoutSuppressed },
      lookup: registryLookup(registries),
      config: config.delivery,
      registry,
      logger,
      // With the database store, one replica runs the retention pass per interval.
      retentionLease:
        config.delivery.store_backend === 'database'
          ? new DatabaseJobLease(storage!.knex, { table: DELIVERY_MAINTENANCE_TABLE, logger })
          : undefined,
      observer: allObservers(reporter, forgetDeadTokens),
    });
    const email = new EmailSender(mailers, deliveries);
    const smsSender = new SmsSender(sms, deliveries);
    const pushSender = new PushSender(push, deliveries, config.delivery.max_batch_size);

    // Templates: the catalog (TemplateService) and the renderer Notify calls, on the service's database.
    // Its store follows delivery.store_backend unless set (as the users area's).
    const templates = createTemplates({
      config: {
        ...config.templates,
        store_backend: config.templates.store_backend ?? config.delivery.store_backend,
      },
      notify: config.notify,
      knex: storage?.knex,
    });
    const templateRegistration = registration(
      TemplateServiceDesc,
      new TemplateRpc(templates.catalog, templates.renderer),
      { scopes: TEMPLATE_METHOD_SCOPES },
    );

    // --- caps (issue 26, helper N2): the frequency-cap ledger of `notify.caps`, in the database with
    // the delivery records (the database's clock decides across replicas), else in memory. Notify's
    // fan-out takes from it (hand `capLedger` to the Notifier); DeleteUser forgets the user's counts.
    const capLedger = createCapLedger(
      config.notify,
      config.delivery.store_backend === 'database' ? storage : undefined,
      undefined,
      logger,
    );
    users.onUserDeleted((userId) => capLedger.eraseUser(userId));
    // Digests (issue 26): open digests per user, category, channel and key, beside the notifications.
    const digestBook = createDigestBook(
      config,
      config.delivery.store_backend === 'database' ? storage : undefined,
    );
    users.onUserDeleted((userId) => digestBook.eraseUser(userId));
    // --- end caps

    // --- notify (issue 25): Notify, its notifications (in the delivery records' store backend) and
    // the topic fan-out runner, over the user directory, the preference book, the template renderer
    // and the unsubscribe links (tests may hand in their own ports).
    const notifyPorts: NotifyPorts = options.notifyPorts ?? {
      directory: users,
      preferences,
      renderer: templates.renderer,
      unsubscribeHeaders: unsubscribe.unsubscribeHeaders,
    };
    const notificationStore =
      config.delivery.store_backend === 'database'
        ? new DatabaseNotificationStore(storage!.knex)
        : new InMemoryNotificationStore();
    const backendsOf = { email: mailers, sms, push } as const;
    const notifier: Notifier = new Notifier({
      ...notifyPorts,
      config: config.notify,
      store: notificationStore,
      targets: {
        inbox,
        email,
        sms: smsSender,
        push: pushSender,
        configured: (channel) => backendsOf[channel].names.length > 0,
      },
      deliveries,
      onTopicAccepted: () => topicFanOut.wake(),
      // When to notify (issue 26): caps, digests and quiet hours (tests may hand in their own).
      caps: capLedger,
      digests: digestBook,
      quietHoursEnd,
      ...options.notifyTiming,
      logger,
    });
    const topicFanOut = new TopicFanOut({
      store: notificationStore,
      directory: notifyPorts.directory,
      fanOut: notifier.fanOut,
      category: (name) => notifier.category(name),
      pageSize: config.notify.topic_page_size,
      ...options.topicFanOut,
      logger,
    });
    lifecycle.worker('topic-fan-out', topicFanOut);
    // The one runner of due work: scheduled notifications, held lines, due digests (notify/schedule/).
    const dueRunner = new DueRunner({
      store: notificationStore,
      work: notifier,
      ...(notifier.digests ? { digests: notifier.digests } : {}),
      ...options.dueRunner,
      logger,
    });
    lifecycle.worker('notify-due-runner', dueRunner);
    lifecycle.worker(
      'notify-retention',
      new NotificationRetention({
        store: notificationStore,
        digests: digestBook,
        retentionDays: config.notify.retention_days,
        lease:
          config.delivery.store_backend === 'database'
            ? new DatabaseJobLease(storage!.knex, { table: NOTIFY_MAINTENANCE_TABLE, logger })
            : new InProcessJobLease(),
        logger,
      }),
    );
    const userErasers = [
      notifier.eraseUser,
      async (userId: string) => void (await deliveryStore.eraseUser(userId, new Date())),
    ];
    // DeleteUser: the user's notifications and the content of their delivery records go too.
    for (const erase of userErasers) users.onUserDeleted(erase);
    // --- end notify

    // --- inbound SMS (issue 28): replies other than STOP / START are kept in a bounded log (the
    // delivery records' store backend) and streamed by WatchInboundSms (scope `sms:inbound`); the
    // retention purge runs on one replica per interval; DeleteUser erases the user's numbers' messages.
    const inboundSmsLog: InboundSmsLog =
      config.delivery.store_backend === 'database'
        ? new DatabaseInboundSmsLog(storage!.knex, { maxMessages: config.webhooks.inbound_sms_max_messages })
        : new InMemoryInboundSmsLog({ maxMessages: config.webhooks.inbound_sms_max_messages });
    const inboundWatch = config.webhooks.inbound_sms_watch;
    const inboundSms = {
      log: inboundSmsLog,
      hub: new InboundSmsWatchHub(inboundSmsLog, {
        bufferSize: inboundWatch.buffer_size,
        maxWatchers: inboundWatch.max_watchers,
        maxWatchersPerCaller: inboundWatch.max_watchers_per_caller,
        stallMs: inboundWatch.stall_seconds * 1000,
        logger,
        notifications: config.delivery.store_backend === 'database' ? notifications : undefined,
      }),
      retention: new InboundSmsRetention({
        log: inboundSmsLog,
        retentionHours: config.webhooks.inbound_sms_retention_hours,
        lease:
          config.delivery.store_backend === 'database'
            ? new DatabaseJobLease(storage!.knex, {
                table: INBOUND_SMS_JOBS_TABLE,
                clock: 'database',
                logger,
              })
            : new InProcessJobLease(),
        logger,
      }),
    };
    lifecycle.worker('inbound-sms-watch', inboundSms.hub);
    lifecycle.worker('inbound-sms-retention', inboundSms.retention);
    users.onContactPointsDeleted(async (user) => void (await inboundSmsLog.eraseSenders(user.phones)));
    // --- end inbound SMS

    const server = new RpcServer({
      name: 'notification',
      logger,
      registry,
      metrics: collector,
      ...serverOptionsFromConfig(config.server),
      onUnexpectedError,
      services: [
        registration(
          NotificationService,
          new NotificationRpc(email, deliveries, smsSender, pushSender, suppressions, deliveryWatch),
          {
            scopes: NOTIFICATION_METHOD_SCOPES,
            // Only SendEmail carries attachments: only it accepts more than server.max_request_bytes.
            maxRequestBytes: { sendEmail: sendEmailRequestBytes(config) },
          },
        ),
        registration(InboxServiceDesc, new InboxRpc(inbox, reporter && ((ok) => reporter.onInboxSend(ok))), {
          scopes: INBOX_METHOD_SCOPES,
        }),
        usersRegistration,
        templateRegistration,
        registration(NotifyServiceDesc, new NotifyRpc(notifier), { scopes: NOTIFY_METHOD_SCOPES }),
        registration(InboundSmsServiceDesc, new InboundSmsRpc(inboundSms.hub), {
          scopes: INBOUND_SMS_METHOD_SCOPES,
        }),
      ],
    });
    lifecycle.serve('server', server);
    // The shutdown deadline counts from when the server begins to stop accepting calls; attempts in
    // flight get until then to finish, the rest are released for another process (never failed).
    let shutdownBegan: number | undefined;
    server.shutdownSignal.addEventListener('abort', () => (shutdownBegan = Date.now()), { once: true });
    lifecycle.worker('delivery', {
      start: () => {
        deliveries.start();
        deliveries.retention.start();
      },
      stop: async () => {
        const deadline = new Date((shutdownBegan ?? Date.now()) + config.server.shutdown_timeout_ms);
        try {
          await deliveries.stop(deadline);
        } finally {
          await Promise.all(registries.map((r) => r.close()));
        }
      },
    });
    const gateway = new AdminGateway({
      preferences: { book: preferences, categories: config.notify.categories },
      inbox,
      auth,
      logger,
      maxPageSize: config.inbox.max_page_size,
      shutdownSignal: server.shutdownSignal,
    });
    server.routes.add(...gateway.routes()).setHeaders(ADMIN_PATH_PREFIX, SECURITY_HEADERS);
    // The operator console (issue 29): operators only (admin.auth.operator_claim), same bearer JWT.
    const consoleGateway = new ConsoleGateway({
      auth,
      logger,
      sections: consoleSections({
        logger,
        deliveries,
        deliveryWatch,
        suppressions,
        notifier,
        users,
        preferences,
        inbox,
        templates,
        registries,
        categories: config.notify.categories,
        maxPageSize: config.inbox.max_page_size,
        shutdownSignal: server.shutdownSignal,
      }),
    });
    server.routes.add(...consoleGateway.routes());
    // Preferences area: one-click unsubscribe (no API token: the signed link is the authentication).
    server.routes.add(...unsubscribeRoutes({ links: unsubscribe, book: preferences, logger }));
    // Provider receipts: signed webhooks (no bearer token; the signature is the authentication).
    const receipts = new ReceiptRecorder({
      inboundLog: inboundSms.log,
      store: deliveryStore,
      // The ids of callbacks taken, so a replayed signed callback is refused (in the same store
      // backend as the deliveries, shared by every replica).
      replays:
        config.delivery.store_backend === 'database'
          ? new DatabaseInboundReplayStore(storage!.knex, {
              retentionHours: config.webhooks.replay_retention_hours,
            })
          : new InMemoryInboundReplayStore({
              retentionHours: config.webhooks.replay_retention_hours,
              maxEntries: config.webhooks.replay_memory_max_entries,
            }),
      registry,
      logger,
      // Bounces, complaints, unsubscribes and STOP go on the service's one suppression list.
      sink: options.suppressionSink ?? suppressions,
      // A receipt that ends a delivery counts in its channel's `-receipts` SLO.
      observer: reporter,
    });
    server.routes.add(
      ...smsWebhookRoutes({ backends: config.sms_backends, webhooks: config.webhooks, recorder: receipts }),
      ...emailWebhookRoutes({
        backends: config.mailer.backends,
        webhooks: config.webhooks,
        recorder: receipts,
      }),
    );
    const observability = new ServiceObservability({
      server,
      registry,
      logger,
      health: config.health,
      metrics: config.metrics,
      collector,
    });
    lifecycle.exporter('observability', observability);
    // The spec's health fragment: the inbox store answers, with backend and latency in the details.
    observability.checker.add(INBOX_HEALTH_CHECK_NAME, async () => ({
      ...(await inboxProvider.health.check()),
    }));
    // One check per backend of every channel: a failing provider reports DEGRADED (207), never
    // UNHEALTHY, so the inbox stays in service while deliveries wait in the queue. Each also shows
    // its backend's circuit breaker (degraded while open).
    for (const { name, channel, backend, check } of registries.flatMap((r) => r.healthChecks())) {
      observability.checker.add(name, withCircuitState(check, deliveries.breakers, channel, backend));
    }

    return {
      server,
      registry,
      storage,
      auth,
      templates: templates.renderer,
      inbox,
      inboxHub: inboxProvider.hub,
      deliveries,
      deliveryWatch,
      inboundSms,
      suppressions,
      mailers,
      sms,
      push,
      users,
      notifier,
      topicFanOut,
      dueRunner,
      userErasers,
      start: () => lifecycle.start(),
      stop: () => lifecycle.stop(),
    };
  } catch (err) {
    // Whatever opened before the failure (the database, an area) is closed again.
    await lifecycle.stop().catch(() => undefined);
    throw err;
  }
}
