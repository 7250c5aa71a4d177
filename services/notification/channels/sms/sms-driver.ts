/**
 * `SmsDriver`: what every SMS backend offers. A driver is the SMS channel's `DeliveryDriver` (the
 * pipeline sends through it) plus a health probe of its provider.
 */
import type { DeliveryDriver } from '../../delivery/driver';
import type { SmsPayload } from './sms-message';

/** The health check name of SMS backend `name`. */
export function smsHealthCheckName(name: string): string {
  return `notifications.sms.${name}`;
}

/**
 * What one probe reports. A provider that does not answer (or refuses the credentials) is `degraded`,
 * never `unhealthy`: the inbox and the durable queue still work, and deliveries wait for the provider.
 */
// A type, not an interface: health checks take `Record<string, unknown>`.
export type SmsHealthResult = {
  status: 'healthy' | 'degraded';
  details: { backend: string; driver: string; latency_ms: number };
  /** On failure only: a short classification, never credentials or driver text. */
  message?: string;
};

/** An SMS backend: sends an SmsPayload and classifies the provider's answer. */
export interface SmsDriver extends DeliveryDriver<SmsPayload> {
  readonly channel: 'sms';
  /** The backend's sender number (`from_number`). */
  readonly fromNumber: string;
  /** Probes the provider; never throws. */
  checkHealth(): Promise<SmsHealthResult>;
}
