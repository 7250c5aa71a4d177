/**
 * `SmsChannel`: the SMS backends of `sms_backends` by name (the primary, else the first, serves
 * unnamed use), their health checks, and the spec's `SMSChannelProtocol` for in-process use: `send`
 * to one or many recipients, one provider call and one result per recipient. The durable way in, with
 * records and retries, is `SmsSender` through the delivery pipeline (SendSms).
 */
import { newId } from '../../../../shared/runtime/ids';

import { FailedPreconditionError, InvalidArgumentError } from '../../../../shared/errors';
import type { Logger } from '../../../../shared/logging/logger';
import { silentLogger } from '../../../../shared/logging/logger';
import type { SendOutcome } from '../../delivery/driver';
import { primaryBackend } from '../backend-list';
import { type NamedSMSConfig, type NamedSMSConfigInput, parseSmsBackends } from './config';
import { smsHealthCheckName, type SmsDriver, type SmsHealthResult } from './sms-driver';
import { SmsGatewayDriver } from './sms-gateway-driver';
import { SMS_STATUS_WEBHOOK_PATH, webhookPath } from '../../delivery/webhook-http';
import { checkSmsBody, checkSmsNumber } from './sms-message';
import { cutText } from '../../../../shared/text/cut';

/** Most recipients of one in-process `send` (as `delivery.max_batch_size` bounds a batch). */
export const MAX_SMS_RECIPIENTS = 10_000;
/** Provider calls one in-process `send` has in flight at once. */
export const SMS_SEND_CONCURRENCY = 8;

/** One backend's health check, ready for `HealthChecker.add(name, check)`. */
export interface SmsHealthCheck {
  /** `notifications.sms.<backend>`. */
  name: string;
  /** Probes the backend; never throws; a failing provider is `degraded`. */
  check: () => Promise<SmsHealthResult>;
}

/** Options of the channel. */
export interface SmsChannelOptions {
  logger?: Logger;
  /** Builds the driver of one backend; the default builds the configured driver (tests: a fake). */
  createDriver?: (backend: NamedSMSConfig, logger: Logger) => SmsDriver;
  /**
   * `webhooks.public_base_url`: when set, each sms_gateway backend asks for status callbacks at
   * `{base}/webhooks/sms/{backend}/status`.
   */
  webhookBaseUrl?: string;
}

/** What an in-process send answers for one recipient: the attempt's outcome. */
export interface SmsSendResult extends SendOutcome {
  /** The recipient, as given. */
  to: string;
}

/** The registered SMS backends of the service (`SMSChannelProtocol`). */
export class SmsChannel {
  private readonly byName = new Map<string, SmsDriver>();
  private readonly primaryName: string | undefined;
  // Aborted by close(): ends in-process sends still waiting on the provider.
  private readonly closing = new AbortController();

  private constructor(backends: readonly NamedSMSConfig[], opts: SmsChannelOptions) {
    const logger = opts.logger ?? silentLogger();
    const create =
      opts.createDriver ?? ((b: NamedSMSConfig, l: Logger) => createSmsDriver(b, l, opts.webhookBaseUrl));
    for (const backend of backends) this.byName.set(backend.name, create(backend, logger));
    this.primaryName = primaryBackend(backends)?.name;
  }

  /**
   * Registers the backends of `backends` (the validated `sms_backends`, or a list written in code that
   * is validated here: a ConfigError naming `notification.sms_backends[...]`). Nothing connects before
   * the first send or probe.
   */
  static configure(
    backends: readonly (NamedSMSConfig | NamedSMSConfigInput)[] = [],
    opts: SmsChannelOptions = {},
  ): SmsChannel {
    return new SmsChannel(parseSmsBackends(backends as NamedSMSConfigInput[]), opts);
  }

  /** Backend names, in config order. */
  get names(): string[] {
    return [...this.byName.keys()];
  }

  /** The primary backend's name; undefined when none is configured. */
  get primary(): string | undefined {
    return this.primaryName;
  }

  /**
   * The driver named `name`, or the primary one when `name` is absent or empty.
   * FailedPreconditionError when no backend is configured; InvalidArgumentError (field `backend`) for
   * an unknown name.
   */
  get(name?: string): SmsDriver {
    if (this.byName.size === 0) throw new FailedPreconditionError('no SMS backend configured');
    const wanted = name === undefined || name === '' ? this.primaryName! : name;
    const driver = this.byName.get(wanted);
    if (!driver) {
      throw new InvalidArgumentError(
        `backend: unknown SMS backend ${JSON.stringify(cutText(wanted, 100))} (configured: ${this.names.join(', ')})`,
        'backend',
      );
    }
    return driver;
  }

  /** Every backend's driver, in config order. */
  drivers(): SmsDriver[] {
    return [...this.byName.values()];
  }

  /** One health check per backend, to register with the service's HealthChecker. */
  healthChecks(): SmsHealthCheck[] {
    return this.drivers().map((d) => ({ name: smsHealthCheckName(d.name), check: () => d.checkHealth() }));
  }

  /**
   * Sends `body` to every recipient (one provider call each, at most SMS_SEND_CONCURRENCY at once)
   * through `backend` (the primary when absent) and resolves with one result per recipient, in the
   * order given. Everything is checked before the first call: bad input is InvalidArgumentError
   * naming the field (`recipients[2]`, `body`, `backend`) and nothing is sent. One attempt each, no
   * record: for retries and a delivery record, use SendSms (the pipeline).
   */
  async send(
    recipients: string | readonly string[],
    body: string,
    opts: { backend?: string } = {},
  ): Promise<SmsSendResult[]> {
    const list = typeof recipients === 'string' ? [recipients] : recipients;
    const driver = this.get(opts.backend);
    if (!Array.isArray(list) || list.length === 0) {
      throw new InvalidArgumentError('recipients: at least one recipient is required', 'recipients');
    }
    if (list.length > MAX_SMS_RECIPIENTS) {
      throw new InvalidArgumentError(
        `recipients: ${list.length} recipients, over the limit of ${MAX_SMS_RECIPIENTS}`,
        'recipients',
      );
    }
    const numbers = list.map((to, i) =>
      checkSmsNumber(to, typeof recipients === 'string' ? 'recipients' : `recipients[${i}]`),
    );
    const text = checkSmsBody(body);
    const results = new Array<SmsSendResult>(numbers.length);
    let next = 0;
    const worker = async () => {
      while (next < numbers.length) {
        const i = next++;
        const to = numbers[i]!;
        let outcome: SendOutcome;
        try {
          outcome = await driver.send(
            { to, body: text },
            { deliveryId: newId(), attempt: 1, signal: this.closing.signal },
          );
        } catch {
          // A driver that throws has a bug; the recipient still gets its own result.
          outcome = { class: 'retryable', reason: 'internal error in the SMS driver' };
        }
        results[i] = { to, ...outcome };
      }
    };
    await Promise.all(Array.from({ length: Math.min(SMS_SEND_CONCURRENCY, numbers.length) }, worker));
    return results;
  }

  /** Ends in-process sends in flight and closes every driver's connections. */
  async close(): Promise<void> {
    this.closing.abort(new Error('SMS channel closed'));
    await Promise.allSettled(this.drivers().map((d) => d.close()));
  }
}

/** The driver of one configured backend. */
export function createSmsDriver(backend: NamedSMSConfig, logger: Logger, webhookBaseUrl?: string): SmsDriver {
  switch (backend.driver) {
    case 'sms_gateway':
      return new SmsGatewayDriver({
        name: backend.name,
        config: backend.sms_gateway!,
        logger,
        ...(webhookBaseUrl === undefined
          ? {}
          : {
              statusCallbackUrl:
                webhookBaseUrl.replace(/\/+$/, '') + webhookPath(SMS_STATUS_WEBHOOK_PATH, backend.name),
            }),
      });
  }
}
