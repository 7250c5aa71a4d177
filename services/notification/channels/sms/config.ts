/**
 * Config of the SMS channel (`notification.sms_backends`): the `sms_gateway` driver's settings and one
 * named SMS backend. services/notification/config.ts composes them into the service config.
 */
import { z } from 'zod';

import {
  e164,
  httpUrl,
  itemName,
  nonEmptyString,
  positiveInt,
  parseSectionInCode,
} from '../../../../shared/config';
import { backendList, primaryFlag } from '../backend-list';

/** Driver settings of the `sms_gateway` SMS driver (a Twilio-compatible Messages API). */
export const SmsGatewayDriverConfigSchema = z.strictObject({
  account_sid: nonEmptyString(),
  /** Secret. */
  auth_token: nonEmptyString(),
  /** Sender number in international (E.164) format, e.g. +15551234567. */
  from_number: e164(),
  /** Provider API root; tests and staging point it at a local server. */
  base_url: httpUrl().default('https://api.sms-gateway.example.com'),
  /** Longest wait for the API's answer to one request, connect to last byte. */
  timeout_ms: positiveInt().default(10000),
  /** Keep-alive connections to the API at most. */
  max_connections: positiveInt().default(10),
});

/** One named SMS backend (`NamedSMSConfig`). */
export const NamedSMSConfigSchema = z.strictObject({
  name: itemName(),
  primary: primaryFlag,
  driver: z.literal('sms_gateway').default('sms_gateway'),
  sms_gateway: SmsGatewayDriverConfigSchema.optional(),
});

/** `sms_backends`: the named SMS backends (unique names, at most one primary, settings present). */
export const SmsBackendsSchema = backendList(NamedSMSConfigSchema, 'SMS');

/** sms_gateway driver settings. */
export type SmsGatewayDriverConfig = z.infer<typeof SmsGatewayDriverConfigSchema>;
/** One named SMS backend. */
export type NamedSMSConfig = z.infer<typeof NamedSMSConfigSchema>;
/** One named SMS backend as it may be written (defaults not yet applied). */
export type NamedSMSConfigInput = z.input<typeof NamedSMSConfigSchema>;

/**
 * Parses (and defaults) an `sms_backends` list given in code (`SmsChannel.configure`); a ConfigError
 * naming each bad key (`notification.sms_backends[0].sms_gateway.from_number: ...`) for an invalid one.
 */
export function parseSmsBackends(
  input: readonly (NamedSMSConfig | NamedSMSConfigInput)[] = [],
): NamedSMSConfig[] {
  return parseSectionInCode(SmsBackendsSchema, input, 'notification', ['sms_backends']);
}
