/**
 * The notification service in-process with Notify's ports given as fakes (fakes.ts), a real SMTP
 * peer and a Twilio-style SMS peer, and Connect clients of NotifyService, InboxService and
 * NotificationService.
 */
import { createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { NotifyService } from '../../../shared/gen/svc/notification/v1/notify_pb';
import type { NotificationConfigInput } from '../../../services/notification/config';
import type { NotificationAppOptions } from '../../../services/notification/app';
import { gatewayConfig, startTwilioPeer, type TwilioPeer } from '../channels/sms/twilio-peer';
import {
  smtpMailerConfig,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../support/notification-app';
import { startSmtpPeer, type SmtpPeer } from '../../support/smtp-peer';
import { FakeDirectory, FakePreferences, FakeRenderer, fakeUnsubscribeHeaders } from './fakes';

/** The categories every notify test configures. */
export const CATEGORIES = [
  { name: 'comments', channels: ['inbox', 'email', 'sms', 'push'] },
  { name: 'security', channels: ['inbox', 'email', 'sms'], required: true },
  { name: 'digest', channels: ['inbox'] },
] as const;

export interface NotifyHarness {
  running: RunningNotificationApp;
  notify: Client<typeof NotifyService>;
  directory: FakeDirectory;
  preferences: FakePreferences;
  renderer: FakeRenderer;
  smtp?: SmtpPeer;
  twilio?: TwilioPeer;
  close(): Promise<void>;
}

/** Starts the app; `peers` false runs it without mail and SMS backends. */
export async function startNotifyHarness(
  overrides: NotificationConfigInput = {},
  opts: {
    peers?: boolean;
    directory?: FakeDirectory;
    topicFanOut?: { leaseMs?: number; pollMs?: number };
    dueRunner?: { leaseMs?: number; pollMs?: number };
    notifyTiming?: NotificationAppOptions['notifyTiming'];
  } = {},
): Promise<NotifyHarness> {
  const peers = opts.peers ?? true;
  const smtp = peers ? await startSmtpPeer() : undefined;
  const twilio = peers ? await startTwilioPeer() : undefined;
  const directory = opts.directory ?? new FakeDirectory();
  const preferences = new FakePreferences();
  const renderer = new FakeRenderer();
  const running = await startNotificationApp(
    {
      ...overrides,
      ...(smtp ? { mailer: smtpMailerConfig(smtp.port) } : {}),
      ...(twilio
        ? { sms_backends: [{ name: 'gateway', driver: 'sms_gateway', sms_gateway: gatewayConfig(twilio) }] }
        : {}),
      delivery: { base_delay_ms: 5, max_delay_ms: 20, poll_interval_ms: 20, ...overrides.delivery },
      notify: {
        categories: CATEGORIES.map((c) => ({ ...c, channels: [...c.channels] })),
        ...overrides.notify,
      },
    } as NotificationConfigInput,
    {
      notifyPorts: { directory, preferences, renderer, unsubscribeHeaders: fakeUnsubscribeHeaders },
      ...(opts.topicFanOut ? { topicFanOut: opts.topicFanOut } : {}),
      ...(opts.dueRunner ? { dueRunner: opts.dueRunner } : {}),
      ...(opts.notifyTiming ? { notifyTiming: opts.notifyTiming } : {}),
    },
  );
  const notify = createClient(
    NotifyService,
    createConnectTransport({ baseUrl: running.baseUrl, httpVersion: '1.1', useBinaryFormat: false }),
  );
  return {
    running,
    notify,
    directory,
    preferences,
    renderer,
    smtp,
    twilio,
    async close() {
      await running.close();
      await smtp?.close();
      await twilio?.close();
    },
  };
}

/** Polls an async condition until it holds (a deadline against hangs, not a timing assertion). */
export async function waitForAsync(
  condition: () => Promise<boolean>,
  what = 'condition',
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
