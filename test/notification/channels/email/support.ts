/** Helpers shared by the email channel tests. */
import { randomUUID } from 'node:crypto';

import type { DriverSendContext } from '../../../../services/notification/delivery/driver';
import { SMTPDriverConfigSchema } from '../../../../services/notification/channels/email/config';
import type { SMTPDriverConfig } from '../../../../services/notification/channels/email/config';
import {
  Mailable,
  type OutboundEmail,
  toOutboundEmail,
} from '../../../../services/notification/channels/email/mailable';

/** The sender of every test backend. */
export const FROM = 'noreply@sender.example.com';

/** An attempt context as the pipeline passes it. */
export function attempt(n = 1, signal: AbortSignal = new AbortController().signal): DriverSendContext {
  return { deliveryId: randomUUID(), attempt: n, signal };
}

/** SMTP settings for a peer on 127.0.0.1:`port`, short timeouts so failures come quickly. */
export function smtpConfig(port: number, extra: Partial<SMTPDriverConfig> = {}): SMTPDriverConfig {
  return SMTPDriverConfigSchema.parse({
    host: '127.0.0.1',
    port,
    connection_timeout_ms: 2000,
    greeting_timeout_ms: 2000,
    socket_timeout_ms: 5000,
    ...extra,
  });
}

/** A message with subject "Hello" and what `build` adds, with a Message-ID in the sender's domain. */
export function outbound(build: (m: Mailable) => Mailable): OutboundEmail {
  return toOutboundEmail(build(new Mailable().subject('Hello')).build(), FROM);
}

/** A message to jane@example.com, text "Hi Jane", plus what `extra` adds. */
export function simpleEmail(extra: (m: Mailable) => Mailable = (m) => m): OutboundEmail {
  return outbound((m) => extra(m.to('jane@example.com').text('Hi Jane')));
}
