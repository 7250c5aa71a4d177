/**
 * `NotificationModule` (spec: the root area's wiring): registers the SMS backends of `sms_backends` and
 * the push backends of `push_backends` by name (the primary of each list also serves unnamed use) and
 * exports the two channels, the spec's `SMSChannelProtocol` (`sms`) and `PushChannelProtocol` (`push`).
 * `NotificationModule.stub()` has no backends: a send then fails with FAILED_PRECONDITION "no SMS
 * backend configured" (or push). Email is the mailer area's (`MailerModule`).
 */
import type { z } from 'zod';
import type { Logger } from '../../../shared/logging/logger';
import { parseSectionInCode } from '../../../shared/config';
import { type NamedPushConfig, PushBackendsSchema } from './push/config';
import { PushChannel } from './push/push-channel';
import { type NamedSMSConfig, SmsBackendsSchema } from './sms/config';
import { SmsChannel } from './sms/sms-channel';

/** The two sections as they may be written in code (validated by configure). */
export interface NotificationModuleConfigInput {
  sms_backends?: z.input<typeof SmsBackendsSchema>;
  push_backends?: z.input<typeof PushBackendsSchema>;
}

/** The validated sections the module reads. */
export interface NotificationModuleConfig {
  sms_backends: readonly NamedSMSConfig[];
  push_backends: readonly NamedPushConfig[];
}

/** Options of the module. */
export interface NotificationModuleOptions {
  logger?: Logger;
  /** `webhooks.public_base_url`: the SMS backends ask for status callbacks there. */
  webhookBaseUrl?: string;
}

/** The SMS and push channels of the service. */
export class NotificationModule {
  private constructor(
    /** `SMSChannelProtocol`: the SMS backends. */
    readonly sms: SmsChannel,
    /** `PushChannelProtocol`: the push backends. */
    readonly push: PushChannel,
  ) {}

  /**
   * Registers the backends of `config`: the service's validated config, or sections written in code
   * (validated here with the service's schema). With no argument: no backends (all defaults).
   */
  static configure(
    config: NotificationModuleConfig | NotificationModuleConfigInput = {},
    opts: NotificationModuleOptions = {},
  ): NotificationModule {
    // Validated config parses to itself; sections written in code get their defaults and checks.
    const sections = {
      sms_backends: parseSectionInCode(SmsBackendsSchema, config.sms_backends ?? [], 'notification', [
        'sms_backends',
      ]),
      push_backends: parseSectionInCode(PushBackendsSchema, config.push_backends ?? [], 'notification', [
        'push_backends',
      ]),
    };
    return new NotificationModule(
      SmsChannel.configure(sections.sms_backends, opts),
      PushChannel.configure(sections.push_backends, opts),
    );
  }

  /** No backends: for tests of code that needs the channels but never sends. */
  static stub(): NotificationModule {
    return NotificationModule.configure({ sms_backends: [], push_backends: [] });
  }

  /** Closes every backend's connections. */
  async close(): Promise<void> {
    await Promise.all([this.sms.close(), this.push.close()]);
  }
}
