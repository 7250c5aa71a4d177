/**
 * `PushChannel`: the push backends of `push_backends` in the channels' one `BackendRegistry` (by name,
 * the primary, or the first, for unnamed use; health checks; close), and the spec's in-process
 * `PushChannelProtocol`: `send` of one or many
 * messages returns a result per recipient, `sendBatch` sends through the driver's batch path. These
 * direct sends do not record deliveries; the RPCs go through the delivery pipeline instead.
 */
import { newId } from '../../../../shared/runtime/ids';
import { InvalidArgumentError } from '../../../../shared/errors';
import type { Logger } from '../../../../shared/logging/logger';
import { silentLogger } from '../../../../shared/logging/logger';
import type { SendOutcome } from '../../delivery/driver';
import { BackendRegistry } from '../backend-registry';
import { ApnsDriver } from './apns-driver';
import type { NamedPushConfig } from './config';
import { FcmDriver } from './fcm-driver';
import type { PushDriver } from './push-driver';
import { checkPushPayload, type PushPayload } from './push-payload';

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
export class PushChannel extends BackendRegistry<PushDriver, NamedPushConfig> implements PushChannelProtocol {
  private constructor(backends: readonly NamedPushConfig[], opts: PushChannelOptions) {
    const logger = opts.logger ?? silentLogger();
    const create = opts.createDriver ?? createPushDriver;
    super({ channel: 'push', kind: 'push', backends, create: (backend) => create(backend, logger) });
  }

  /** Registers the (validated) backends of `push_backends`. */
  static configure(backends: readonly NamedPushConfig[], opts: PushChannelOptions = {}): PushChannel {
    return new PushChannel(backends, opts);
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
