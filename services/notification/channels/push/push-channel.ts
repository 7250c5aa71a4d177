/**
 * `PushChannel`: the push backends of `push_backends` by name (the primary, or the first, for unnamed
 * use), their health checks, and the spec's in-process `PushChannelProtocol`: `send` of one or many
 * messages returns a result per recipient, `sendBatch` sends through the driver's batch path. These
 * direct sends do not record deliveries; the RPCs go through the delivery pipeline instead.
 */
import { newId } from '../../../../shared/runtime/ids';
import { FailedPreconditionError, InvalidArgumentError } from '../../../../shared/errors';
import type { Logger } from '../../../../shared/logging/logger';
import { silentLogger } from '../../../../shared/logging/logger';
import type { BackendLookup } from '../../delivery/pipeline';
import type { SendOutcome } from '../../delivery/driver';
import { primaryBackend } from '../backend-list';
import { ApnsDriver } from './apns-driver';
import type { NamedPushConfig } from './config';
import { FcmDriver } from './fcm-driver';
import { pushHealthCheckName, type PushDriver, type PushHealthResult } from './push-driver';
import { checkPushPayload, type PushPayload } from './push-payload';
import { cutText } from '../../../../shared/text/cut';

/** One recipient's result of an in-process send. */
export interface PushSendResult {
  deviceToken: string;
  outcome: SendOutcome;
}

/** The spec's PushChannelProtocol. */
export interface PushChannelProtocol {
  send(messages: PushPayload | readonly PushPayload[], backend?: string): Promise<PushSendResult[]>;
  sendBatch(messages: readonly PushPayload[], backend?: string): Promise<PushSendResult[]>;
}

/** Options of the channel. */
export interface PushChannelOptions {
  logger?: Logger;
  /** Builds one backend's driver; the default builds the configured one. */
  createDriver?: (backend: NamedPushConfig, logger: Logger) => PushDriver;
}

/** The registered push backends. */
export class PushChannel implements PushChannelProtocol {
  private readonly backends = new Map<string, PushDriver>();
  private readonly primaryName: string | undefined;

  private constructor(backends: readonly NamedPushConfig[], opts: PushChannelOptions) {
    const logger = opts.logger ?? silentLogger();
    const create = opts.createDriver ?? createPushDriver;
    for (const b of backends) this.backends.set(b.name, create(b, logger));
    this.primaryName = primaryBackend(backends)?.name;
  }

  /** Registers the (validated) backends of `push_backends`. */
  static configure(backends: readonly NamedPushConfig[], opts: PushChannelOptions = {}): PushChannel {
    return new PushChannel(backends, opts);
  }

  /** Backend names, in config order. */
  get names(): string[] {
    return [...this.backends.keys()];
  }

  /** The primary backend's name; undefined when none is configured. */
  get primary(): string | undefined {
    return this.primaryName;
  }

  /**
   * The driver named `name`, or the primary when absent or empty. FailedPreconditionError when no
   * backend is configured; InvalidArgumentError (field `backend`) for an unknown name.
   */
  get(name?: string): PushDriver {
    if (this.backends.size === 0) throw new FailedPreconditionError('no push backend configured');
    const wanted = name === undefined || name === '' ? this.primaryName! : name;
    const driver = this.backends.get(wanted);
    if (!driver) {
      throw new InvalidArgumentError(
        `backend: unknown push backend ${JSON.stringify(cutText(wanted, 100))} (configured: ${this.names.join(', ')})`,
        'backend',
      );
    }
    return driver;
  }

  /** Every driver, in list order. */
  drivers(): PushDriver[] {
    return [...this.backends.values()];
  }

  /** The pipeline's view: `push` resolves here, other channels not. */
  lookup(): BackendLookup {
    return (channel, backend) => {
      if (channel !== 'push' || this.backends.size === 0) return undefined;
      if (backend !== undefined && backend !== '') return this.backends.get(backend);
      return this.backends.get(this.primaryName!);
    };
  }

  /**
   * Validates a message for `driver`: the checks of every push message plus the provider's payload
   * limit. InvalidArgumentError naming the field (`field`.device_token, ...).
   */
  check(driver: PushDriver, message: PushPayload, field = 'message'): PushPayload {
    const payload = checkPushPayload(message, field);
    if (driver.payloadBytes(payload) > driver.maxPayloadBytes) {
      throw new InvalidArgumentError(
        `${field}: the notification is larger than the ${driver.maxPayloadBytes} bytes ${driver.driver} accepts`,
        field,
      );
    }
    return payload;
  }

  /** Sends one or many messages directly (no delivery records): a result per recipient, in order. */
  async send(messages: PushPayload | readonly PushPayload[], backend?: string): Promise<PushSendResult[]> {
    const list: readonly PushPayload[] = Array.isArray(messages) ? messages : [messages as PushPayload];
    return this.sendBatch(list, backend);
  }

  /** Sends many messages through the driver's batch path over its one session. */
  async sendBatch(messages: readonly PushPayload[], backend?: string): Promise<PushSendResult[]> {
    const driver = this.get(backend);
    if (messages.length === 0)
      throw new InvalidArgumentError('messages: at least one is required', 'messages');
    const payloads = messages.map((m, i) => this.check(driver, m, `messages[${i}]`));
    const outcomes = await driver.sendBatch(payloads, {
      deliveryId: newId(),
      attempt: 1,
      signal: new AbortController().signal,
    });
    return payloads.map((p, i) => ({ deviceToken: p.deviceToken, outcome: outcomes[i]! }));
  }

  /** One health check per backend (`notifications.push.<name>`). */
  healthChecks(): { name: string; check: () => Promise<PushHealthResult> }[] {
    return this.drivers().map((d) => ({ name: pushHealthCheckName(d.name), check: () => d.checkHealth() }));
  }

  /** Closes every backend's session. */
  async close(): Promise<void> {
    await Promise.allSettled(this.drivers().map((d) => d.close()));
  }
}

/** The driver of one configured backend. */
export function createPushDriver(backend: NamedPushConfig, logger: Logger): PushDriver {
  switch (backend.driver) {
    case 'push_driver_a':
      return new FcmDriver({ name: backend.name, config: backend.push_driver_a!, logger });
    case 'push_driver_b':
      return new ApnsDriver({ name: backend.name, config: backend.push_driver_b!, logger });
  }
}
