/**
 * `MailerProtocol`: what every mailer backend offers. A mailer is the email channel's
 * `DeliveryDriver` (the pipeline sends through it) plus a health probe of its provider.
 */
import type { DeliveryDriver } from '../../delivery/driver';
import type { OutboundEmail } from './mailable';

/** The health check name of backend `name`. */
export function mailerHealthCheckName(name: string): string {
  return `notifications.mailer.${name}`;
}

/**
 * What one probe reports, in the mapping shape shared/monitoring health checks accept. A provider
 * that does not answer is `degraded`, never `unhealthy`: the inbox and the durable queue still work,
 * and deliveries wait for the provider instead of failing.
 */
// A type, not an interface: health checks take `Record<string, unknown>`, which only a type alias
// satisfies without an index signature.
export type MailerHealthResult = {
  status: 'healthy' | 'degraded';
  details: {
    backend: string;
    driver: string;
    latency_ms: number;
    /** True when this result is a cached earlier probe. */
    cached: boolean;
  };
  /** On failure only: a short classification, never credentials or driver text. */
  message?: string;
};

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
  /** Probes the provider; never throws. */
  checkHealth(): Promise<MailerHealthResult>;
}
