/**
 * `PushSender`: the push channel's way into the delivery pipeline, between the RPC layer and
 * `DeliveryPipeline` (as EmailSender is for email). It resolves the backend, checks every message
 * against the push rules and the provider's payload limit, and only then records the deliveries: a
 * batch with one bad message records nothing.
 */
import { InvalidArgumentError } from '../../../../shared/errors';
import type { DeliveryPipeline } from '../../delivery/pipeline';
import type { DeliveryView } from '../../delivery/types';
import type { PushChannel } from './push-channel';
import type { PushPayload } from './push-payload';

/** Options of one send. */
export interface PushSendOptions {
  /** Backend name; the primary push backend when absent or empty. */
  backend?: string;
  /** One send: its key. A batch: each message's key is derived from it and the message's index. */
  idempotencyKey?: string;
  /** The user it is for (a Notify fan-out), recorded on the delivery for DeleteUser. */
  userId?: string; /** The Notify category it is sent for (the console's activity filter). */
  category?: string;
}

/** Turns SendPush and SendPushBatch requests into push deliveries. */
export class PushSender {
  constructor(
    private readonly channel: PushChannel,
    private readonly pipeline: DeliveryPipeline,
    /** `delivery.max_batch_size`. */
    private readonly maxBatchSize: number,
  ) {}

  /** Validates and records one notification for `scope`; resolves once the record is committed. */
  async send(message: PushPayload, opts: PushSendOptions, scope: string): Promise<DeliveryView> {
    const driver = this.channel.get(opts.backend);
    const payload = this.channel.check(driver, message, 'message');
    const result = await this.pipeline.submit({
      channel: 'push',
      // The caller's choice, not the resolved primary: only a named backend is pinned, so an unnamed
      // send may fail over (delivery.routing.push) to another backend.
      backend: opts.backend || undefined,
      recipient: payload.deviceToken,
      payload,
      scope,
      idempotencyKey: opts.idempotencyKey || undefined,
      ...(opts.userId ? { userId: opts.userId } : {}),
      ...(opts.category ? { category: opts.category } : {}),
    });
    return result.delivery;
  }

  /**
   * Validates every message first (InvalidArgumentError naming `messages[i].<field>`, nothing
   * recorded), then records one delivery per message, all in one commit; results in request order.
   */
  async sendBatch(
    messages: readonly PushPayload[],
    opts: PushSendOptions,
    scope: string,
  ): Promise<DeliveryView[]> {
    const driver = this.channel.get(opts.backend);
    if (messages.length === 0)
      throw new InvalidArgumentError('messages: at least one is required', 'messages');
    if (messages.length > this.maxBatchSize) {
      throw new InvalidArgumentError(
        `messages: a batch may carry at most ${this.maxBatchSize} messages (delivery.max_batch_size)`,
        'messages',
      );
    }
    const payloads = messages.map((m, i) => this.channel.check(driver, m, `messages[${i}]`));
    const key = opts.idempotencyKey || undefined;
    // One commit for the whole batch (bounded by max_batch_size): a batch is recorded whole or not
    // at all, and the worker is woken once for it.
    const results = await this.pipeline.submitBatch(
      payloads.map((payload, i) => ({
        channel: 'push' as const,
        backend: opts.backend || undefined,
        recipient: payload.deviceToken,
        payload,
        scope,
        idempotencyKey: key === undefined ? undefined : `${key}#${i}`,
      })),
    );
    return results.map((r) => r.delivery);
  }
}
