/**
 * `EmailSender`: the email channel's way into the delivery pipeline, between the RPC layer and
 * `DeliveryPipeline`. It resolves the backend, builds and validates the Mailable with the mailer
 * module's limits, gives the message its one Message-ID and submits it. Everything a caller can get
 * wrong is refused here or in the pipeline's own checks, before anything is recorded or sent.
 */
import type { DeliveryPipeline } from '../../delivery/pipeline';
import type { BackendLookup } from '../../delivery/pipeline';
import type { DeliveryView } from '../../delivery/types';
import { Mailable, type MailableFields, type OutboundEmail, toOutboundEmail } from './mailable';
import type { MailerModule } from './mailer-module';

/** One SendEmail request, as the domain sees it. */
export interface SendEmailInput extends MailableFields {
  /** Backend name; the primary mailer when absent or empty. */
  backend?: string;
  /** Optional; the same key with the same content returns the first delivery and sends nothing. */
  idempotencyKey?: string;
}

/** What a send answers. */
export interface EmailSendResult {
  delivery: DeliveryView;
  /** False when an earlier delivery with the same key and content was returned. */
  created: boolean;
  /**
   * The RFC 5322 Message-ID every attempt of this delivery carries. Empty only for an earlier
   * delivery whose content the retention already erased (`delivery.content_retention_hours`).
   */
  messageId: string;
}

/**
 * Requests of this many bytes must pass the transport so that a message of `maxMessageBytes` (content
 * bytes, attachments before base64) reaches `Mailable.build`, which refuses a larger one with a clear
 * INVALID_ARGUMENT. Connect JSON carries bytes as base64 (4/3 of them), so that is the bound; the
 * extra MiB covers field names, addresses and framing. A request beyond it is refused by the
 * transport itself (RESOURCE_EXHAUSTED).
 */
export function emailRequestBytes(maxMessageBytes: number): number {
  return Math.ceil((maxMessageBytes * 4) / 3) + 1024 * 1024;
}

/** The pipeline's view of the mailers: `email` resolves through the module, other channels not. */
export function mailerLookup(mailers: MailerModule): BackendLookup {
  return (channel, backend) => {
    if (channel !== 'email') return undefined;
    // `get` refuses unknown names and an empty module: for the lookup, both mean "no such backend".
    if (mailers.names.length === 0) return undefined;
    if (backend !== undefined && backend !== '' && !mailers.names.includes(backend)) return undefined;
    return mailers.get(backend);
  };
}

/** Turns SendEmail requests into email deliveries. */
export class EmailSender {
  constructor(
    private readonly mailers: MailerModule,
    private readonly pipeline: DeliveryPipeline,
  ) {}

  /**
   * Validates and records one email for `scope` (the caller) and resolves once the record is
   * committed. FailedPreconditionError when no mailer is configured; InvalidArgumentError naming the
   * field for bad input or an unknown backend; AlreadyExistsError when the idempotency key was used
   * for other content.
   */
  async send(input: SendEmailInput, scope: string): Promise<EmailSendResult> {
    // The backend first: with none configured, no input could ever be sent.
    const mailer = this.mailers.get(input.backend);
    const message = Mailable.of(input).build(this.mailers.limits);
    const payload: OutboundEmail = toOutboundEmail(message, mailer.fromEmail);
    const recipient = [...message.to, ...message.cc, ...message.bcc].map((a) => a.email).join(', ');
    const result = await this.pipeline.submit({
      channel: 'email',
      backend: mailer.name,
      recipient,
      payload,
      // The Message-ID is new on every call: the hash covers the message without it, so a retried
      // call with the same key and content finds its delivery instead of ALREADY_EXISTS.
      hashPayload: message,
      scope,
      idempotencyKey: input.idempotencyKey || undefined,
    });
    return { delivery: result.delivery, created: result.created, messageId: storedMessageId(result.payload) };
  }
}

/** The Message-ID of a stored email payload; empty once the payload was erased. */
function storedMessageId(payload: unknown): string {
  if (typeof payload !== 'object' || payload === null) return '';
  const id = (payload as Partial<OutboundEmail>).messageId;
  return typeof id === 'string' ? id : '';
}
