/**
 * `SmsChannel`: the SMS backends of `sms_backends` in the channels' one `BackendRegistry` (by name,
 * the primary, else the first, for unnamed use; health checks; close), and the spec's
 * `SMSChannelProtocol` for in-process use: `send`
 * to one or many recipients, one provider call and one result per recipient. The durable way in, with
 * records and retries, is `SmsSender` through the delivery pipeline (SendSms).
 */
import { newId } from '../../../../shared/runtime/ids';

import { InvalidArgumentError } from '../../../../shared/errors';
import type { Logger } from '../../../../shared/logging/logger';
import { silentLogger } from '../../../../shared/logging/logger';
import type { SendOutcome } from '../../delivery/driver';
import { BackendRegistry } from '../backend-registry';
import { type NamedSMSConfig, type NamedSMSConfigInput, parseSmsBackends } from './config';
import type { SmsDriver } from './sms-driver';
import { SmsGatewayDriver } from './sms-gateway-driver';
import { SMS_STATUS_WEBHOOK_PATH, webhookPath } from '../../delivery/webhook-http';
import { checkSmsBody, checkSmsNumber } from './sms-message';

/** Most recipients of one in-process `send` (as `delivery.max_batch_size` bounds a batch). */
export const MAX_SMS_RECIPIENTS = 10_000;
/** Provider calls one in-process `send` has in flight at once. */
export const SMS_SEND_CONCURRENCY = 8;

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
export class SmsChannel extends BackendRegistry<SmsDriver, NamedSMSConfig> {
  // Aborted by close(): ends in-process sends still waiting on the provider.
  private readonly closing = new AbortController();

  private constructor(backends: readonly NamedSMSConfig[], opts: SmsChannelOptions) {
    const logger = opts.logger ?? silentLogger();
    const create =
      opts.createDriver ?? ((b: NamedSMSConfig, l: Logger) => createSmsDriver(b, l, opts.webhookBaseUrl));
    super({ channel: 'sms', kind: 'SMS', backends, create: (backend) => create(backend, logger) });
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
    return new SmsChannel(parseSmsBackends(backends), opts);
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
  override close(): Promise<void> {
    this.closing.abort(new Error('SMS channel closed'));
    return super.close();
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
