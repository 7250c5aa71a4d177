/**
 * What the `notification` alert channel needs from the notification service, in the domain's terms:
 * send one email, send one SMS, each with its idempotency key. The gRPC client that implements it
 * lives in ../notification/ (the monitor's client of the notification service); the composition root
 * hands a factory to the alerts area, so nothing here knows the wire.
 */
import type { NotificationChannelConfig } from './config';

/** One email to one recipient. */
export interface AlertEmail {
  to: string;
  subject: string;
  text: string;
  /** Mailer backend name; unset for the notification service's primary. */
  backend?: string;
  idempotencyKey: string;
}

/** One SMS to one number. */
export interface AlertSms {
  to: string;
  body: string;
  /** SMS backend name; unset for the primary. */
  backend?: string;
  idempotencyKey: string;
}

/** Sends alert messages through the notification service. */
export interface AlertNotifier {
  /** Resolves once the service accepted the email; else rejects with {@link AlertNotifierError}. */
  sendEmail(email: AlertEmail): Promise<void>;
  /** Resolves once the service accepted the SMS; else rejects with {@link AlertNotifierError}. */
  sendSms(sms: AlertSms): Promise<void>;
  /** Closes the connection. */
  close(): void;
}

/**
 * A message the notification service did not accept: `code` names why (the RPC code's name, e.g.
 * `Unauthenticated`, safe to log), `retryable` says whether the same call may succeed later.
 */
export class AlertNotifierError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'AlertNotifierError';
  }
}

/** Builds the notifier of one `notification` channel from its settings. */
export type AlertNotifierFactory = (settings: NotificationChannelConfig['notification']) => AlertNotifier;
