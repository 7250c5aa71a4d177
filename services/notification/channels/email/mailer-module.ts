/**
 * `MailerModule`: the mailer area's wiring (spec: `MailerModule.configure(config)`,
 * `MailerModule.stub(config?)`). It fills the channels' one `BackendRegistry` with a mailer per entry
 * of `mailer.backends` (the primary serves unnamed use, a health check per backend, close) and keeps
 * the limits every Mailable is built with.
 */
import type { Logger } from '../../../../shared/logging/logger';
import { silentLogger } from '../../../../shared/logging/logger';
import { BackendRegistry } from '../backend-registry';
import {
  type MailerConfig,
  type MailerConfigInput,
  type NamedMailerConfig,
  parseMailerConfig,
} from './config';
import { HttpApiMailer } from './http-api-mailer';
import { mailableLimits, type MailableLimits } from './mailable';
import type { MailerProtocol } from './mailer';
import { SmtpMailer } from './smtp-mailer';

/** Options of the module. */
export interface MailerModuleOptions {
  logger?: Logger;
  /** Builds the mailer of one backend; the default builds the configured driver. */
  createMailer?: (backend: NamedMailerConfig, logger: Logger) => MailerProtocol;
}

/** The registered mailer backends of the service: the channels' one registry, filled with mailers. */
export class MailerModule extends BackendRegistry<MailerProtocol, NamedMailerConfig> {
  /** The limits every Mailable is built with. */
  readonly limits: MailableLimits;

  private constructor(
    readonly config: MailerConfig,
    opts: MailerModuleOptions,
  ) {
    const logger = opts.logger ?? silentLogger();
    const create = opts.createMailer ?? createMailer;
    super({
      channel: 'email',
      kind: 'mailer',
      backends: config.backends,
      create: (backend) => create(backend, logger),
    });
    this.limits = mailableLimits(config);
  }

  /**
   * Registers the backends of `config` (validated config, or a section written in code that is
   * validated here). With no config: no backends, default limits.
   */
  static configure(
    config: MailerConfig | MailerConfigInput = {},
    opts: MailerModuleOptions = {},
  ): MailerModule {
    return new MailerModule(parseMailerConfig(config), opts);
  }

  /**
   * For tests: no backends, or those of the config given; nothing connects before the first send
   * or probe. `createMailer` replaces the drivers (for example with a recording fake).
   */
  static stub(config?: MailerConfigInput, opts: MailerModuleOptions = {}): MailerModule {
    return MailerModule.configure(config ?? {}, opts);
  }
}

/** The driver of one configured backend. */
export function createMailer(backend: NamedMailerConfig, logger: Logger): MailerProtocol {
  const common = { name: backend.name, fromEmail: backend.from_email, fromName: backend.from_name, logger };
  switch (backend.driver) {
    case 'smtp':
      return new SmtpMailer({ ...common, config: backend.smtp! });
    case 'http_api':
      return new HttpApiMailer({ ...common, config: backend.http_api! });
  }
}
