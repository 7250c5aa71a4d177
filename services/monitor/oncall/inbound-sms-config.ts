/**
 * `monitor.oncall.inbound_sms`: the monitor's consumer of the notification service's inbound SMS
 * stream (inbound-sms.ts): where the service is, the token to read the stream with (scope
 * `sms:inbound` of the notification service), and the reconnect waits. Off by default.
 */
import { z } from 'zod';
import { bool, hostPort, positiveInt } from '../../../shared/config';

/** `monitor.oncall.inbound_sms`. */
export const InboundSmsConsumerConfigSchema = z
  .strictObject({
    /** Reads the replies and acknowledges pages by `ACK <code>`; needs `grpc_address`. */
    enabled: bool().default(false),
    /** `host:port` of the notification service's gRPC port (plaintext, as inside a cluster). */
    grpc_address: hostPort().optional(),
    /** Sent as `authorization: Bearer <token>`; needs the `sms:inbound` scope. A secret, never logged. */
    api_token: z.string().default(''),
    /** The first reconnect wait's ceiling after the stream fails (full jitter), doubled per failure. */
    reconnect_min_ms: positiveInt(60_000).default(500),
    /** The longest reconnect wait. */
    reconnect_max_ms: positiveInt(3_600_000).default(30_000),
  })
  .superRefine((c, ctx) => {
    if (c.enabled && c.grpc_address === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['grpc_address'],
        message: 'required when enabled: the notification service gRPC address (host:port)',
      });
    }
    if (c.reconnect_min_ms > c.reconnect_max_ms) {
      ctx.addIssue({
        code: 'custom',
        path: ['reconnect_max_ms'],
        message: 'must be at least reconnect_min_ms',
      });
    }
  })
  .prefault({});

/** Validated `monitor.oncall.inbound_sms`. */
export type InboundSmsConsumerConfig = z.infer<typeof InboundSmsConsumerConfigSchema>;
