/**
 * `SmsSender`: the SMS channel's way into the delivery pipeline, between the RPC layer (SendSms) and
 * `DeliveryPipeline`. It checks the backend, the number and the body, and submits the payload
 * without a sender: whichever backend sends an attempt puts its own `from_number` on it, so an SMS
 * that fails over to another backend leaves from that backend's number. Everything a caller can get
 * wrong is refused here or in the pipeline's own checks, before anything is recorded or sent.
 */
import type { DeliveryPipeline } from '../../delivery/pipeline';
import type { DeliveryView } from '../../delivery/types';
import type { SmsChannel } from './sms-channel';
import { checkSmsBody, checkSmsNumber, type SmsPayload } from './sms-message';

/** One SendSms request, as the domain sees it. */
export interface SendSmsInput {
  /** E.164 recipient. */
  to: string;
  body: string;
  /** Backend name; the primary SMS backend when absent or empty. */
  backend?: string;
  /** Optional; the same key with the same content returns the first delivery and sends nothing. */
  idempotencyKey?: string;
  /** The user it is for (a Notify fan-out), recorded on the delivery for DeleteUser. */
  userId?: string; /** The Notify category it is sent for (the console's activity filter). */
  category?: string;
}

/** What a send answers. */
export interface SmsSubmitResult {
  delivery: DeliveryView;
  /** False when an earlier delivery with the same key and content was returned. */
  created: boolean;
}

/** Turns SendSms requests into SMS deliveries. */
export class SmsSender {
  constructor(
    private readonly sms: SmsChannel,
    private readonly pipeline: DeliveryPipeline,
  ) {}

  /**
   * Validates and records one SMS for `scope` (the caller) and resolves once the record is committed.
   * FailedPreconditionError when no SMS backend is configured; InvalidArgumentError naming the field
   * (`to`, `body`, `backend`) for bad input; AlreadyExistsError when the idempotency key was used for
   * other content.
   */
  async send(input: SendSmsInput, scope: string): Promise<SmsSubmitResult> {
    // The backend first: with none configured, no input could ever be sent.
    const driver = this.sms.get(input.backend);
    const payload: SmsPayload = {
      to: checkSmsNumber(input.to, 'to'),
      body: checkSmsBody(input.body, 'body'),
    };
    const result = await this.pipeline.submit({
      channel: 'sms',
      // The caller's choice, not the resolved primary: only a named backend is pinned, so an unnamed
      // send may fail over (delivery.routing.sms) to another backend.
      backend: input.backend || undefined,
      recipient: payload.to,
      payload,
      // The idempotency hash as it was when payloads carried the sender (the named backend's or the
      // primary's number): a call retried across an upgrade still finds its delivery.
      hashPayload: { ...payload, from: driver.fromNumber },
      scope,
      idempotencyKey: input.idempotencyKey || undefined,
      ...(input.userId ? { userId: input.userId } : {}),
      ...(input.category ? { category: input.category } : {}),
    });
    return { delivery: result.delivery, created: result.created };
  }
}
