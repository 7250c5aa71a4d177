/**
 * The `http_api` mailer: a SendGrid v3-compatible REST API (`POST {base_url}/v3/mail/send`, bearer
 * API key), over node:http(s) with a keep-alive agent capped at `max_connections`. It sends the stored
 * OutboundEmail as it is, Message-ID included, and classifies the answer from http-api-outcomes.ts.
 * The API key goes into the Authorization header and nowhere else: not into reasons, logs or errors.
 */
import http from 'node:http';
import https from 'node:https';

import type { Logger } from '../../../../shared/logging/logger';
import { silentLogger } from '../../../../shared/logging/logger';
import type { DriverSendContext, SendOutcome } from '../../delivery/driver';
import { boundedRequest, noAnswerOutcome } from '../http-request';
import type { HttpApiDriverConfig } from './config';
import { classifyHttpApiAnswer, HTTP_API_ERROR_OUTCOMES } from './http-api-outcomes';
import { type EmailAddress, type OutboundEmail, outboundEmailProblem } from './mailable';
import type { BackendHealthResult } from '../backend-registry';
import type { MailerProtocol } from './mailer';

/** The longest a health probe may take (below the health checker's default 5 s per check). */
export const HTTP_API_PROBE_TIMEOUT_MS = 4000;

/** What the http_api mailer is built from. */
export interface HttpApiMailerOptions {
  name: string;
  fromEmail: string;
  /** The display name when the message has none (`from_name` of the backend). */
  fromName?: string;
  config: HttpApiDriverConfig;
  logger?: Logger;
}

/** Why a request ended without an answer. */

/** The `http_api` driver of one named backend. */
export class HttpApiMailer implements MailerProtocol {
  readonly channel = 'email' as const;
  readonly driver = 'http_api';
  readonly name: string;
  readonly fromEmail: string;
  readonly fromName: string | undefined;
  private readonly config: HttpApiDriverConfig;
  private readonly base: URL;
  private readonly agent: http.Agent;
  private readonly log: Logger;
  private probing: Promise<BackendHealthResult> | undefined;

  constructor(opts: HttpApiMailerOptions) {
    this.name = opts.name;
    this.fromEmail = opts.fromEmail;
    this.fromName = opts.fromName;
    this.config = opts.config;
    this.base = new URL(opts.config.base_url.replace(/\/+$/, '') + '/');
    const Agent = this.base.protocol === 'https:' ? https.Agent : http.Agent;
    this.agent = new Agent({ keepAlive: true, maxSockets: opts.config.max_connections });
    this.log = (opts.logger ?? silentLogger()).child({ component: 'http-api-mailer', backend: opts.name });
  }

  /** Posts `payload` once; every answer (or its absence) becomes a SendOutcome. */
  async send(payload: OutboundEmail, ctx: DriverSendContext): Promise<SendOutcome> {
    const problem = outboundEmailProblem(payload);
    if (problem !== undefined) return { class: 'permanent', reason: `malformed email payload: ${problem}` };
    const body = JSON.stringify(this.v3Body(payload, ctx.deliveryId));
    const result = await boundedRequest({
      method: 'POST',
      url: new URL('v3/mail/send', this.base),
      headers: {
        authorization: `Bearer ${this.config.api_key}`,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
      },
      body,
      agent: this.agent,
      timeoutMs: this.config.timeout_ms,
      signal: ctx.signal,
    });
    const outcome =
      'status' in result
        ? classifyHttpApiAnswer(result, [this.config.api_key])
        : noAnswerOutcome(HTTP_API_ERROR_OUTCOMES, result);
    if (outcome.class !== 'sent') {
      this.log.warn(
        {
          deliveryId: ctx.deliveryId,
          attempt: ctx.attempt,
          outcome: outcome.class,
          code: outcome.providerCode,
        },
        'http_api send failed',
      );
    }
    return outcome;
  }

  /** The API answers at all (any HTTP status) within the probe timeout. Not authenticated. */
  checkHealth(): Promise<BackendHealthResult> {
    this.probing ??= this.probe().finally(() => {
      this.probing = undefined;
    });
    return this.probing;
  }

  /** Closes the keep-alive connections. */
  async close(): Promise<void> {
    this.agent.destroy();
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

  private async probe(): Promise<BackendHealthResult> {
    const started = performance.now();
    const result = await boundedRequest({
      method: 'GET',
      url: this.base,
      headers: {},
      agent: this.agent,
      timeoutMs: Math.min(this.config.timeout_ms, HTTP_API_PROBE_TIMEOUT_MS),
    });
    const details = {
      backend: this.name,
      driver: this.driver,
      latency_ms: Math.round(performance.now() - started),
      cached: false,
    };
    if ('status' in result) return { status: 'healthy', details };
    const outcome = noAnswerOutcome(HTTP_API_ERROR_OUTCOMES, result);
    return { status: 'degraded', details, message: `mail API check failed: ${outcome.reason}` };
  }
}

function v3Address(a: EmailAddress): EmailAddress {
  return a.name ? { email: a.email, name: a.name } : { email: a.email };
}
