/**
 * The `targets` entries of the monitor: their one home, beside the targets area that reads them; the
 * service's root config (../config.ts) composes the list (unique names).
 */
import { z } from 'zod';

import { hostPort, httpUrl, itemName, positiveInt, positiveNumber } from '../../../shared/config';

// RFC 9110 field names (tokens) and values (visible characters, spaces and tabs inside).
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * A service the monitor watches: its gRPC health and/or HTTP `/health` are probed (see
 * services/monitor/targets/README.md). With both set, a probe succeeds only when both answer.
 */
export const TargetConfigSchema = z
  .strictObject({
    name: itemName(),
    /** `host:port` of the gRPC port; probed with grpc.health.v1 `Check` for service "". */
    grpc_address: hostPort().optional(),
    /** URL of an HTTP health endpoint; a 2xx answer is up. */
    http_url: httpUrl().optional(),
    /**
     * Headers sent with the HTTP probe (secret: every value is redacted), e.g. the
     * `authorization` a protected `/health` needs (`health.auth_token` of the watched service).
     */
    headers: z
      .record(
        z.string().regex(HEADER_NAME, { error: 'expected an HTTP header name' }),
        z.string().regex(HEADER_VALUE, { error: 'expected an HTTP header value (no control characters)' }),
      )
      .optional(),
    /** Sent as `Authorization: Bearer <token>` with the HTTP probe (secret). */
    bearer_token: z
      .string()
      .regex(/^[\x21-\x7e]+$/, { error: 'expected a token of visible ASCII characters' })
      .optional(),
    /** Seconds from the start of one probe to the start of the next; fractions allowed (0.5). */
    interval_seconds: positiveNumber().default(15),
    /**
     * Milliseconds one probe may take (the gRPC deadline, the HTTP timeout); a slower answer is a
     * failure ("timeout"). Default: the interval, at most 5000.
     */
    timeout_ms: positiveInt().optional(),
  })
  .superRefine((t, ctx) => {
    if (!t.grpc_address && !t.http_url) {
      ctx.addIssue({
        code: 'custom',
        path: ['grpc_address'],
        message: 'a target needs grpc_address or http_url',
      });
    }
    if (
      t.bearer_token !== undefined &&
      Object.keys(t.headers ?? {}).some((h) => h.toLowerCase() === 'authorization')
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['bearer_token'],
        message: 'set bearer_token or an authorization header, not both',
      });
    }
  });

/** One watched service. */
export type TargetConfig = z.infer<typeof TargetConfigSchema>;
