/**
 * `EmailSender`: the email channel's way into the delivery pipeline, between the RPC layer and
 * `DeliveryPipeline`. It resolves the backend, builds and validates the Mailable with the mailer
 * module's limits, gives the message its one Message-ID and submits it. Everything a caller can get
 * wrong is refused here or in the pipeline's own checks, before anything is recorded or sent.
 */
import type { DeliveryPipeline, SubmitInput } from '../../delivery/pipeline';
import { normaliseRecipient } from '../../delivery/suppression';
import type { DeliveryView } from '../../delivery/types';
import {
  type EmailMessage,
  Mailable,
  type MailableFields,
  type OutboundEmail,
  toOutboundEmail,
} from './mailable';
import type { MailerProtocol } from './mailer';
import type { MailerModule } from './mailer-module';

/** One SendEmail request, as the domain sees it. */
export interface SendEmailInput extends MailableFields {
  /** Backend name; the primary mailer when absent or empty. */
  backend?: string;
  /** Optional; the same key with the same content returns the first delivery and sends nothing. */
  idempotencyKey?: string;
  /** The user it is for (a Notify fan-out), recorded on the delivery for DeleteUser. */
  userId?: string; /** The Notify category it is sent for (the console's activity filter). */
  category?: string;
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
    const result = await this.pipeline.submit(
      emailSubmission(message, mailer, scope, {
        // The caller's choice, not the resolved primary: only a named backend is pinned, so an
        // unnamed send may fail over (delivery.routing.email) to another mailer.
        backend: input.backend || undefined,
        idempotencyKey: input.idempotencyKey || undefined,
        userId: input.userId,
        category: input.category,
      }),
    );
    return { delivery: result.delivery, created: result.created, messageId: storedMessageId(result.payload) };
  }
}

/** What `emailSubmission` takes besides the message. */
export interface EmailSubmissionOptions {
  /**
   * The backend the caller named; absent when none was (the pipeline then starts at the primary and
   * may fail over or round-robin to the other mailers). A named backend is pinned: never moved.
   */
  backend?: string;
  /** Optional; the same key with the same content returns the first delivery and sends nothing. */
  idempotencyKey?: string;
  /** The user it is for (a Notify fan-out). */
  userId?: string;
  /** The Notify category it is sent for. */
  category?: string;
}

/**
 * The pipeline submission of a validated email: the payload with its one new Message-ID (in the
 * domain of `mailer`, the named backend or the primary), every address (to, cc, bcc) as the
 * recipient, and the content hash taken over the message without the Message-ID, which is new on
 * every call: a retried call with the same key and content then finds its delivery instead of
 * ALREADY_EXISTS. The payload carries no sender address: whichever mailer sends an attempt stamps its
 * own `from_email`, so an email that fails over from one backend to another leaves with the second
 * one's address, and the same Message-ID.
 */
export function emailSubmission(
  message: EmailMessage,
  mailer: Pick<MailerProtocol, 'fromEmail'>,
  scope: string,
  options: EmailSubmissionOptions = {},
): SubmitInput {
  const payload: OutboundEmail = toOutboundEmail(message, mailer.fromEmail);
  const recipients = [...message.to, ...message.cc, ...message.bcc].map((a) => a.email);
  const { backend, idempotencyKey, userId, category } = options;
  return {
    channel: 'email',
    backend,
    recipient: recipients.join(', '),
    recipients,
    withoutRecipients: withoutSuppressed,
    payload,
    hashPayload: message,
    scope,
    idempotencyKey,
    ...(userId ? { userId } : {}),
    ...(category ? { category } : {}),
  };
}

/** The list key of an address; the address as given when the list could not hold it. */
function listKey(address: string): string {
  try {
    return normaliseRecipient('email', address);
  } catch {
    return address;
  }
}

/**
 * The email without its suppressed addresses (to, cc and bcc each filtered), or null when no `to`
 * address is left: copies (cc, bcc) of a message none of its addressees may receive are not sent
 * (delivery/README.md, "Suppression list").
 */
export function withoutSuppressed(
  payload: unknown,
  suppressed: ReadonlySet<string>,
): { recipient: string; payload: OutboundEmail } | null {
  const email = payload as OutboundEmail;
  const keep = (list: OutboundEmail['to']) => list.filter((a) => !suppressed.has(listKey(a.email)));
  const rest: OutboundEmail = { ...email, to: keep(email.to), cc: keep(email.cc), bcc: keep(email.bcc) };
  if (rest.to.length === 0) return null;
  const recipient = [...rest.to, ...rest.cc, ...rest.bcc].map((a) => a.email).join(', ');
  return { recipient, payload: rest };
}

/** The Message-ID of a stored email payload; empty once the payload was erased. */
export function storedMessageId(payload: unknown): string {
  if (typeof payload !== 'object' || payload === null) return '';
  const id = (payload as Partial<OutboundEmail>).messageId;
  return typeof id === 'string' ? id : '';
}
