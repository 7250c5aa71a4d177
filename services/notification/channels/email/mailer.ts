/**
 * `MailerProtocol`: what every mailer backend offers. A mailer is the email channel's
 * `DeliveryDriver` (the pipeline sends through it) plus a health probe of its provider.
 */
import type { DeliveryDriver } from '../../delivery/driver';
import type { BackendHealthResult } from '../backend-registry';
import type { OutboundEmail } from './mailable';

/** A mailer backend: sends an OutboundEmail and classifies the provider's answer. */
export interface MailerProtocol extends DeliveryDriver<OutboundEmail> {
  readonly channel: 'email';
  /**
   * The backend's sender address (`from_email`), stamped on every message it sends (after a
   * failover too); Message-IDs of deliveries submitted through it are made in its domain.
   */
  readonly fromEmail: string;
  /** The backend's display name (`from_name`), used when a message has none of its own. */
  readonly fromName?: string | undefined;
  /**
   * Probes the provider; never throws. The details say `cached: true` when the result is an
   * earlier probe's.
   */
  checkHealth(): Promise<BackendHealthResult>;
}
