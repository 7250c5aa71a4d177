/**
 * The `smtp` mailer: nodemailer's SMTP transport (pooled unless `pool: false`) to one relay. It sends
 * the stored OutboundEmail as it is, Message-ID included, and classifies the relay's answer from
 * smtp-outcomes.ts. It never throws for what the relay does.
 */
import { createTransport } from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer';

import type { Logger } from '../../../../shared/logging/logger';
import { silentLogger } from '../../../../shared/logging/logger';
import type { DriverSendContext, SendOutcome } from '../../delivery/driver';
import type { SMTPDriverConfig } from './config';
import { type EmailAddress, type OutboundEmail, outboundEmailProblem } from './mailable';
import type { BackendHealthResult } from '../backend-registry';
import { type MailerProtocol } from './mailer';
import { ProbeCache } from './probe-cache';
import { classifySmtpFailure, type SmtpFailure } from './smtp-outcomes';
import { safeText } from '../outcome-table';

/**
 * The longest a health probe may take. Below the health checker's default per-check limit (5 s),
 * which would report the check UNHEALTHY (503) instead of our DEGRADED (207).
 */
export const SMTP_PROBE_TIMEOUT_MS = 4000;

/** What the SMTP mailer is built from. */
export interface SmtpMailerOptions {
  name: string;
  fromEmail: string;
  /** The display name when the message has none (`from_name` of the backend). */
  fromName?: string;
  config: SMTPDriverConfig;
  logger?: Logger;
}

type Transporter = ReturnType<typeof createTransport>;

/** The `smtp` driver of one named backend. */
export class SmtpMailer implements MailerProtocol {
  readonly channel = 'email' as const;
  readonly driver = 'smtp';
  readonly name: string;
  readonly fromEmail: string;
  readonly fromName: string | undefined;
  private readonly transport: Transporter;
  private readonly config: SMTPDriverConfig;
  private readonly log: Logger;
  private readonly probe: ProbeCache<BackendHealthResult>;
  private closed = false;

  constructor(opts: SmtpMailerOptions) {
    this.name = opts.name;
    this.fromEmail = opts.fromEmail;
    this.fromName = opts.fromName;
    this.config = opts.config;
    this.log = (opts.logger ?? silentLogger()).child({ component: 'smtp-mailer', backend: opts.name });
    this.transport = createTransport(transportOptions(opts.config, opts.config.pool));
    this.probe = new ProbeCache(() => this.verify(), opts.config.health_cache_ms);
  }

  /** Sends `payload` once; every answer of the relay becomes a SendOutcome. */
  async send(payload: OutboundEmail, ctx: DriverSendContext): Promise<SendOutcome> {
    const problem = outboundEmailProblem(payload);
    if (problem !== undefined) return { class: 'permanent', reason: `malformed email payload: ${problem}` };
    if (this.closed) return { class: 'retryable', reason: 'mailer is closed (shutting down)' };
    if (ctx.signal.aborted) return { class: 'retryable', reason: 'attempt aborted before sending' };
    try {
      const info = await this.transport.sendMail(this.mailOptions(payload, ctx.signal));
      return sentOutcome(info as SentInfo);
    } catch (err) {
      const outcome = classifySmtpFailure(err as SmtpFailure);
      this.log.warn(
        {
          deliveryId: ctx.deliveryId,
          attempt: ctx.attempt,
          outcome: outcome.class,
          code: outcome.providerCode,
        },
        'smtp send failed',
      );
      return outcome;
    }
  }

  /** Connects and says EHLO (and logs in when configured); cached for `health_cache_ms`. */
  checkHealth(): Promise<BackendHealthResult> {
    return this.probe.get();
  }

  /** Closes the pool's connections. */
  async close(): Promise<void> {
    this.closed = true;
    this.transport.close();
  }

  private mailOptions(p: OutboundEmail, signal: AbortSignal): Mail.Options & { signal: AbortSignal } {
    return {
      // The sender is this backend's, whichever backend the delivery started on (failover); the
      // caller chooses only the display name, this backend's `from_name` when it chose none.
      from: { name: p.fromName ?? this.fromName ?? '', address: this.fromEmail },
      to: p.to.map(mailbox),
      cc: p.cc.map(mailbox),
      // nodemailer puts Bcc recipients in the envelope only: no Bcc header is written.
      bcc: p.bcc.map(mailbox),
      replyTo: p.replyTo ? mailbox(p.replyTo) : undefined,
      subject: p.subject,
      text: p.text,
      html: p.html,
      headers: p.headers,
      messageId: p.messageId,
      // The envelope nodemailer would derive from the From, To, Cc and Bcc headers, given outright: it
      // then parses the addresses once (setEnvelope) instead of on each of its three getEnvelope calls
      // per message. The addresses were validated and deduplicated by Mailable.
      envelope: { from: this.fromEmail, to: envelopeRecipients(p) },
      attachments: p.attachments.map((a) => ({
        filename: a.filename,
        contentType: a.contentType,
        content: a.contentBase64,
        encoding: 'base64',
      })),
      // The pooled transport aborts a queued or running send with this.
      signal,
    };
  }

  private async verify(): Promise<BackendHealthResult> {
    const started = performance.now();
    const details = (cached = false) => ({
      backend: this.name,
      driver: this.driver,
      latency_ms: Math.round(performance.now() - started),
      cached,
    });
    // A probe uses its own one-shot connection with tight timeouts, so a slow relay never blocks a
    // pooled connection and the probe always ends within SMTP_PROBE_TIMEOUT_MS.
    const probe = createTransport(
      transportOptions(
        {
          ...this.config,
          connection_timeout_ms: Math.min(this.config.connection_timeout_ms, SMTP_PROBE_TIMEOUT_MS / 2),
          greeting_timeout_ms: Math.min(this.config.greeting_timeout_ms, SMTP_PROBE_TIMEOUT_MS / 2),
          socket_timeout_ms: Math.min(this.config.socket_timeout_ms, SMTP_PROBE_TIMEOUT_MS / 2),
        },
        false,
      ),
    );
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        probe.verify(),
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(Object.assign(new Error('probe timed out'), { code: 'ETIMEDOUT' })),
            SMTP_PROBE_TIMEOUT_MS,
          );
        }),
      ]);
      return { status: 'healthy', details: details() };
    } catch (err) {
      const failure = classifySmtpFailure(err as SmtpFailure);
      this.log.warn({ code: failure.providerCode }, 'smtp health probe failed');
      return {
        status: 'degraded',
        details: details(),
        message: `smtp relay check failed: ${failure.reason}`,
      };
    } finally {
      clearTimeout(timer);
      probe.close();
    }
  }
}

/** What sendMail resolves with (the parts we read). */
interface SentInfo {
  response?: string;
  serverMessageId?: string;
  accepted?: unknown[];
  rejected?: unknown[];
}

/** The relay took the message: the reference is its queue id, else its own id, else its reply. */
function sentOutcome(info: SentInfo): SendOutcome {
  const response = info.response ?? '';
  const queueId =
    /queued as ([A-Za-z0-9._-]+)/i.exec(response)?.[1] ?? /\bid=([A-Za-z0-9._-]+)/i.exec(response)?.[1];
  const outcome: SendOutcome = {
    class: 'sent',
    providerReference: queueId ?? info.serverMessageId ?? safeText(response),
    providerCode: /^\d{3}/.exec(response)?.[0] ?? '250',
  };
  // Some recipients refused at RCPT while others were accepted: the message went out, and the record
  // says who did not get it.
  const rejected = info.rejected?.length ?? 0;
  if (rejected > 0) {
    outcome.reason = `accepted for ${info.accepted?.length ?? 0} recipients, refused for ${rejected}`;
    outcome.refusedRecipients = info.rejected!.map(envelopeAddress);
  }
  return outcome;
}

/** An address nodemailer lists in `accepted` / `rejected`: a string, or `{ address }`. */
function envelopeAddress(entry: unknown): string {
  if (typeof entry === 'string') return entry;
  const address = (entry as { address?: unknown } | null)?.address;
  return typeof address === 'string' ? address : String(entry);
}

/** Every recipient address, in header order (to, cc, bcc), as the SMTP envelope lists them. */
function envelopeRecipients(p: OutboundEmail): string[] {
  const to: string[] = [];
  for (const list of [p.to, p.cc, p.bcc]) for (const a of list) to.push(a.email);
  return to;
}

function mailbox(a: EmailAddress): { name: string; address: string } {
  return { name: a.name ?? '', address: a.email };
}

/** nodemailer's transport options from our config keys. */
function transportOptions(c: SMTPDriverConfig, pool: boolean) {
  const common = {
    host: c.host,
    port: c.port,
    secure: c.secure,
    requireTLS: c.require_tls,
    tls: { rejectUnauthorized: c.tls_reject_unauthorized },
    auth: c.user !== '' ? { user: c.user, pass: c.password } : undefined,
    connectionTimeout: c.connection_timeout_ms,
    greetingTimeout: c.greeting_timeout_ms,
    socketTimeout: c.socket_timeout_ms,
    // Only what the payload carries is sent: never a file path or URL named in an attachment.
    disableFileAccess: true,
    disableUrlAccess: true,
  };
  return pool ? { ...common, pool: true as const, maxConnections: c.max_connections } : common;
}
