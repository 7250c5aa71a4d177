/**
 * `SmsDriver`: what every SMS backend offers. A driver is the SMS channel's `DeliveryDriver` (the
 * pipeline sends through it) plus a health probe of its provider.
 */
import type { DeliveryDriver } from '../../delivery/driver';
import type { BackendHealthResult } from '../backend-registry';
import type { SmsPayload } from './sms-message';

/** An SMS backend: sends an SmsPayload and classifies the provider's answer. */
export interface SmsDriver extends DeliveryDriver<SmsPayload> {
  readonly channel: 'sms';
  /** The backend's sender number (`from_number`). */
  readonly fromNumber: string;
  /** Probes the provider; never throws. */
  checkHealth(): Promise<BackendHealthResult>;
}
