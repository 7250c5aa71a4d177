/**
 * The admin section's auth (`notification.admin.auth`): its one home, beside the admin gateway that
 * reads it; the service's root config (../config.ts) composes it.
 */
import { z } from 'zod';

import { duration, httpUrl, nonEmptyString, nonNegativeInt } from '../../../shared/config';

/**
 * Authentication of the admin endpoints (the spec leaves the scheme open; our decision: bearer JWT,
 * HS256 with `jwt_secret` or verified against `jwks_url`). With neither set, outside production, the
 * admin endpoints act as `demo_user`.
 */
export const AdminAuthConfigSchema = z
  .strictObject({
    /** Secret; HMAC key of HS256 tokens. */
    jwt_secret: z.string().min(32, { error: 'expected at least 32 characters' }).optional(),
    jwks_url: httpUrl().optional(),
    issuer: nonEmptyString().optional(),
    audience: nonEmptyString().optional(),
    clock_skew_seconds: nonNegativeInt().default(30),
    /** Longest lifetime (`exp` - `iat`) of an accepted admin JWT: seconds or "24h"; longer ones are refused. */
    max_token_lifetime: duration().default(24 * 3600),
    demo_user: nonEmptyString().default('demo'),
    /**
     * The JWT claim naming the caller's roles (an array of strings, or space-separated values like
     * `scope`). A token holding one of `operator_roles` there is an operator: it may use the console
     * (`/admin/console`) and see other people's records; any other token is an end user's.
     */
    operator_claim: nonEmptyString().default('roles'),
    operator_roles: z.array(nonEmptyString()).min(1).max(32).default(['notification:operator']),
  })
  .prefault({});

/** Admin endpoint authentication. */
export type AdminAuthConfig = z.infer<typeof AdminAuthConfigSchema>;
