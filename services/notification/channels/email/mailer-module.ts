/**
 * `MailerModule`: the mailer area's wiring (spec: `MailerModule.configure(config)`,
 * `MailerModule.stub(config?)`). It builds one mailer per entry of `mailer.backends`, serves the
 * primary one for unnamed use, exposes a health check per backend and closes them all.
 */
import { FailedPreconditionError, InvalidArgumentError } from '../../../../shared/errors';
import type { Logger } from '../../../../shared/logging/logger';
import { silentLogger } from '../../../../shared/logging/logger';
import { primaryBackend } from '../backend-list';
import {
  type MailerConfig,
  type MailerConfigInput,
  type NamedMailerConfig,
  parseMailerConfig,
} from './config';
import { HttpApiMailer } from './http-api-mailer';
import { mailableLimits, type MailableLimits } from './mailable';
import { mailerHealthCheckName, type MailerHealthResult, type MailerProtocol } from './mailer';
import { SmtpMailer } from './smtp-mailer';
import { cutText } from '../../../../shared/text/cut';

/** One backend's health check, ready for `HealthChecker.add(name, check)`. */
export interface MailerHealthCheck {
  /** `notifications.mailer.<backend>`. */
  name: string;
  /** Probes the backend; never throws; a failing provider is `degraded`. */
  check: () => Promise<MailerHealthResult>;
}

/** Options of the module. */
export interface MailerModuleOptions {
  logger?: Logger;
  /** Builds the mailer of one backend; the default builds the configured driver. */
  createMailer?: (backend: NamedMailerConfig, logger: Logger) => MailerProtocol;
}

/** The registered mailer backends of the service. */
export class MailerModule {
  private readonly mailers = new Map<string, MailerProtocol>();
  private readonly primaryName: string | undefined;
  /** The limits every Mailable is built with. */
  readonly limits: MailableLimits;

  private constructor(
    readonly config: MailerConfig,
    opts: MailerModuleOptions,
  ) {
    const logger = opts.logger ?? silentLogger();
    const create = opts.createMailer ?? createMailer;
    for (const backend of config.backends) this.mailers.set(backend.name, create(backend, logger));
    this.primaryName = primaryBackend(config.backends)?.name;
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

  /** Backend names, in config order. */
  get names(): string[] {
    return [...this.mailers.keys()];
  }

  /** The primary backend's name; undefined when none is configured. */
  get primary(): string | undefined {
    return this.primaryName;
  }

  /**
   * The mailer named `name`, or the primary one when `name` is absent or empty.
   * FailedPreconditionError when no backend is configured; InvalidArgumentError (field `backend`)
   * for an unknown name.
   */
  get(name?: string): MailerProtocol {
    if (this.mailers.size === 0) throw new FailedPreconditionError('no mailer backend configured');
    const wanted = name === undefined || name === '' ? this.primaryName! : name;
    const mailer = this.mailers.get(wanted);
    if (!mailer) {
      throw new InvalidArgumentError(
        `backend: unknown mailer backend ${JSON.stringify(cutText(wanted, 100))} (configured: ${this.names.join(', ')})`,
        'backend',
      );
    }
    return mailer;
  }

  /** One health check per backend, to register with the service's HealthChecker. */
  healthChecks(): MailerHealthCheck[] {
    return [...this.mailers.values()].map((m) => ({
      name: mailerHealthCheckName(m.name),
      check: () => m.checkHealth(),
    }));
  }

  /** Closes every mailer's connections. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.mailers.values()].map((m) => m.close()));
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
