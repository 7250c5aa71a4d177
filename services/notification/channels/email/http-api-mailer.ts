/**
 * The `http_api` mailer: a SendGrid v3-compatible REST API (`POST {base_url}/v3/mail/send`, bearer
 * API key), over node:http(s) with a keep-alive agent capped at `max_connections`. It sends the stored
 * OutboundEmail as it is, Message-ID included, and classifies the answer from http-api-outcomes.ts.
 * The API key goes into the Authorization header and nowhere else: not into reasons, logs or errors.
 */
import type { Logger } from '../../../../shared/logging/logger';
import type { DriverSendContext, SendOutcome } from '../../delivery/driver';
import type { HttpAnswer } from '../http-request';
import { REST_PROBE_TIMEOUT_MS, RestDriver, type RestRequest } from '../rest-driver';
import type { HttpApiDriverConfig } from './config';
import { classifyHttpApiAnswer, HTTP_API_ERROR_OUTCOMES } from './http-api-outcomes';
import { type EmailAddress, type OutboundEmail, outboundEmailProblem } from './mailable';
import type { MailerProtocol } from './mailer';

/** The longest a health probe may take (the REST drivers' one bound). */
export const HTTP_API_PROBE_TIMEOUT_MS = REST_PROBE_TIMEOUT_MS;

/** What the http_api mailer is built from. */
export interface HttpApiMailerOptions {
  name: string;
  fromEmail: string;
  /** The display name when the message has none (`from_name` of the backend). */
  fromName?: string;
  config: HttpApiDriverConfig;
  logger?: Logger;
}

/** The `http_api` driver of one named backend (the REST skeleton is `RestDriver`'s). */
export class HttpApiMailer extends RestDriver<OutboundEmail> implements MailerProtocol {
  readonly channel = 'email' as const;
  readonly fromEmail: string;
  readonly fromName: string | undefined;
  protected readonly apiName = 'mail API';
  private readonly config: HttpApiDriverConfig;

  constructor(opts: HttpApiMailerOptions) {
    super({
      name: opts.name,
      driver: 'http_api',
      component: 'http-api-mailer',
      baseUrl: opts.config.base_url,
      maxConnections: opts.config.max_connections,
      timeoutMs: opts.config.timeout_ms,
      noAnswer: HTTP_API_ERROR_OUTCOMES,
      logger: opts.logger,
    });
    this.fromEmail = opts.fromEmail;
    this.fromName = opts.fromName;
    this.config = opts.config;
  }

  protected malformed(payload: OutboundEmail): string | undefined {
    const problem = outboundEmailProblem(payload);
    return problem === undefined ? undefined : `malformed email payload: ${problem}`;
  }

  /** `POST v3/mail/send` with the bearer key. */
  protected sendRequest(payload: OutboundEmail, ctx: DriverSendContext): RestRequest {
    const body = JSON.stringify(this.v3Body(payload, ctx.deliveryId));
    return {
      method: 'POST',
      url: new URL('v3/mail/send', this.base),
      headers: {
        authorization: `Bearer ${this.config.api_key}`,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
      },
      body,
    };
  }

  protected classify(answer: HttpAnswer): SendOutcome {
    return classifyHttpApiAnswer(answer, [this.config.api_key]);
  }

  /** The API answers at all (any HTTP status) within the probe timeout. Not authenticated. */
  protected probeRequest(): Omit<RestRequest, 'method' | 'body'> {
    return { url: this.base, headers: {} };
  }

  protected override healthDetails(): Record<string, unknown> {
    return { cached: false };
  }

  /** The v3 request body. */
  private v3Body(p: OutboundEmail, deliveryId: string): Record<string, unknown> {
    const personalization: Record<string, unknown> = { to: p.to.map(v3Address) };
    if (p.cc.length > 0) personalization.cc = p.cc.map(v3Address);
    if (p.bcc.length > 0) personalization.bcc = p.bcc.map(v3Address);
    // The sender is this backend's, whichever backend the delivery started on (failover); the
    // caller chooses only the display name, this backend's `from_name` when it chose none.
    const from: EmailAddress = { email: this.fromEmail };
    const name = p.fromName || this.fromName;
    if (name) from.name = name;
    const content = [{ type: 'text/plain', value: p.text }];
    if (p.html !== undefined) content.push({ type: 'text/html', value: p.html });
    const body: Record<string, unknown> = {
      personalizations: [personalization],
      from,
      subject: p.subject,
      content,
      headers: { ...p.headers, 'Message-ID': p.messageId },
      custom_args: { delivery_id: deliveryId },
    };
    if (p.replyTo) body.reply_to = v3Address(p.replyTo);
    if (p.attachments.length > 0) {
      body.attachments = p.attachments.map((a) => ({
        content: a.contentBase64,
        filename: a.filename,
        type: a.contentType,
        disposition: 'attachment',
      }));
    }
    return body;
  }
}

function v3Address(a: EmailAddress): EmailAddress {
  return a.name ? { email: a.email, name: a.name } : { email: a.email };
}
