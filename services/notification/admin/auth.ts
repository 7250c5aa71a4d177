/**
 * Who is calling the admin gateway: `Authorization: Bearer <JWT>`, the current user is its `sub`.
 *
 * Keys: an HS256 shared secret, or a JWKS URL (RS256, ES256) fetched and cached by jose, or both
 * (the token's `alg` picks the key). Issuer and audience are checked when configured; `exp` and `sub`
 * are required; expiry allows a small clock skew.
 *
 * With no key configured outside production, an ephemeral random HS256 secret is generated so the
 * quick start works: `demoLoginUrl()` gives a link that signs the demo user in. In production a
 * missing key stops the service at start.
 */
import { randomBytes } from 'node:crypto';
import type { FlattenedJWSInput, JWSHeaderParameters, JWTVerifyGetKey, JWTVerifyOptions } from 'jose' with {
  'resolution-mode': 'import',
};
import { FailedPreconditionError, UnauthenticatedError, UnavailableError } from '../../../shared/errors';
import { loadJose } from './jose';
import { parseBearer } from '../../../shared/auth/bearer';

/** Admin authentication settings (a config record: snake_case keys). */
export interface AdminAuthOptions {
  /** HS256 shared secret, at least 32 bytes. */
  jwt_secret?: string;
  /** JWKS document URL for RS256 / ES256 tokens. */
  jwks_url?: string;
  /** Required `iss` when set. */
  issuer?: string;
  /** Required `aud` (one of) when set. */
  audience?: string | string[];
  /** Tolerated clock difference when checking `exp` / `nbf` / `iat` (30 is a sensible default). */
  clock_skew_seconds: number;
  /**
   * Longest lifetime (`exp` minus `iat`) of an accepted token, seconds (default 24 h). A token
   * without `iat` may not expire later than this from now.
   */
  max_token_lifetime?: number;
  /** The `sub` of demo login tokens (only used with the ephemeral secret). */
  demo_user: string;
  /** `production` forbids the ephemeral secret. */
  environment: string;
  /**
   * The claim that says who is an operator (default `roles`): a JSON array of strings, or one string
   * of space-separated values (the OAuth `scope` form).
   */
  operator_claim?: string;
  /** Any of these values in {@link operator_claim} makes the caller an operator (default `notification:operator`). */
  operator_roles?: readonly string[];
}

/** The authenticated caller of an admin request. */
export interface AdminPrincipal {
  /** The token's `sub`: the inbox owner every admin call acts for. */
  userId: string;
  /** The token's `exp`: long-lived responses (the event stream) end then. */
  expiresAt: Date;
  /**
   * The token names an operator role (`operator_claim` holds one of `operator_roles`): the console
   * and other people's records are open to it. An end user sees only their own inbox and preferences.
   */
  operator: boolean;
}

/** Default of `admin.auth.operator_claim`. */
export const DEFAULT_OPERATOR_CLAIM = 'roles';
/** Default of `admin.auth.operator_roles`. */
export const DEFAULT_OPERATOR_ROLES: readonly string[] = ['notification:operator'];

/** Default clock skew, in seconds, for callers that build AdminAuthOptions from partial config. */
export const DEFAULT_CLOCK_SKEW_SECONDS = 30;

const DEMO_TOKEN_LIFETIME = '12h';
/** Default of `admin.auth.max_token_lifetime`, seconds. */
export const DEFAULT_MAX_TOKEN_LIFETIME_SECONDS = 24 * 3600;
const MIN_SECRET_BYTES = 32;
// Failures of the JWKS endpoint itself: our dependency is down, not the caller's token bad.
// (ERR_JOSE_GENERIC: a non-200 or non-JSON JWKS response.)
const JWKS_UNAVAILABLE_CODES = new Set(['ERR_JWKS_TIMEOUT', 'ERR_JWKS_INVALID', 'ERR_JOSE_GENERIC']);

/** Verifies admin bearer tokens. One instance per process: it caches the JWKS. */
export class AdminAuth {
  /** True when running on a generated secret (no keys configured, not production). */
  readonly demoMode: boolean;
  private readonly secret: Uint8Array | undefined;
  private readonly jwksUrl: URL | undefined;
  private readonly verifyOptions: JWTVerifyOptions;
  private keyLoading: Promise<JWTVerifyGetKey> | undefined;

  /** Validates the options; throws FailedPreconditionError for a configuration that cannot work. */
  constructor(private readonly options: AdminAuthOptions) {
    const hasSecret = Boolean(options.jwt_secret);
    const hasJwks = Boolean(options.jwks_url);
    if (!hasSecret && !hasJwks && options.environment === 'production') {
      throw new FailedPreconditionError(
        'admin authentication: in production a jwt_secret or a jwks_url must be configured ' +
          '(the ephemeral demo secret is only made outside production)',
      );
    }
    if (hasSecret && Buffer.byteLength(options.jwt_secret!, 'utf8') < MIN_SECRET_BYTES) {
      throw new FailedPreconditionError(
        `admin authentication: jwt_secret must be at least ${MIN_SECRET_BYTES} bytes for HS256`,
      );
    }
    if (hasJwks) {
      try {
        this.jwksUrl = new URL(options.jwks_url!);
      } catch {
        throw new FailedPreconditionError('admin authentication: jwks_url is not a valid URL');
      }
    }
    this.demoMode = !hasSecret && !hasJwks;
    if (hasSecret) this.secret = new TextEncoder().encode(options.jwt_secret);
    else if (this.demoMode) this.secret = new Uint8Array(randomBytes(MIN_SECRET_BYTES));

    const algorithms = [...(this.secret ? ['HS256'] : []), ...(this.jwksUrl ? ['RS256', 'ES256'] : [])];
    this.verifyOptions = {
      algorithms,
      clockTolerance: options.clock_skew_seconds,
      requiredClaims: ['exp', 'sub'],
      ...(options.issuer ? { issuer: options.issuer } : {}),
      ...(options.audience ? { audience: options.audience } : {}),
    };
  }

  /**
   * A token issued in the future (beyond the clock skew) or living longer than
   * `max_token_lifetime` is refused: a leaked long-lived token would otherwise stay good for as long
   * as its issuer chose. jose has checked that `iat`, when present, is a number.
   */
  private checkLifetime(iat: unknown, exp: number): void {
    const now = Math.floor(Date.now() / 1000);
    const skew = this.options.clock_skew_seconds;
    const max = this.options.max_token_lifetime ?? DEFAULT_MAX_TOKEN_LIFETIME_SECONDS;
    if (typeof iat === 'number') {
      if (iat > now + skew) throw new UnauthenticatedError('the token is issued in the future');
      if (exp - iat > max) throw new UnauthenticatedError('the token lives longer than allowed');
    } else if (exp - now > max + skew) {
      throw new UnauthenticatedError('the token lives longer than allowed');
    }
  }

  /**
   * Verifies the `Authorization` header value and returns the caller.
   * Throws UnauthenticatedError for a missing, malformed, forged, expired or mis-addressed token, and
   * UnavailableError when the JWKS endpoint cannot be reached.
   */
  async authenticate(authorization: string | undefined): Promise<AdminPrincipal> {
    const token = parseBearer(authorization);
    if (!token) throw new UnauthenticatedError('a bearer token is required');
    const jose = await loadJose();
    const key = await this.verificationKey();
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jose.jwtVerify(token, key, this.verifyOptions));
    } catch (err) {
      throw translateVerifyError(err);
    }
    const { sub, exp, iat } = payload;
    this.checkLifetime(iat, exp as number);
    if (typeof sub !== 'string' || sub.length === 0) {
      throw new UnauthenticatedError('the token has no subject');
    }
    // `exp` is a required claim, so jose has checked it is a number.
    return {
      userId: sub,
      expiresAt: new Date((exp as number) * 1000),
      operator: this.namesOperator(payload[this.options.operator_claim ?? DEFAULT_OPERATOR_CLAIM]),
    };
  }

  /** True when the claim's value (an array of strings, or space-separated values) holds an operator role. */
  private namesOperator(claim: unknown): boolean {
    const roles = this.options.operator_roles ?? DEFAULT_OPERATOR_ROLES;
    const values = typeof claim === 'string' ? claim.split(' ') : Array.isArray(claim) ? claim : [];
    return values.some((v) => typeof v === 'string' && roles.includes(v));
  }

  /**
   * Signs a token for `userId` with the ephemeral demo secret (12 h). Only in demo mode: with real
   * keys configured, tokens come from the identity provider, never from this service.
   */
  async issueDemoToken(
    userId: string = this.options.demo_user,
    options: { operator?: boolean } = {},
  ): Promise<string> {
    if (!this.demoMode || !this.secret) {
      throw new FailedPreconditionError('demo tokens exist only when no admin keys are configured');
    }
    const { SignJWT } = await loadJose();
    const roles = this.options.operator_roles ?? DEFAULT_OPERATOR_ROLES;
    const claims = options.operator
      ? { [this.options.operator_claim ?? DEFAULT_OPERATOR_CLAIM]: [roles[0]] }
      : {};
    let jwt = new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(userId)
      .setIssuedAt()
      .setExpirationTime(DEMO_TOKEN_LIFETIME);
    if (this.options.issuer) jwt = jwt.setIssuer(this.options.issuer);
    if (this.options.audience) jwt = jwt.setAudience(this.options.audience);
    return jwt.sign(this.secret);
  }

  /**
   * The management page URL that signs the demo user in: `<baseUrl>/admin/notifications#token=<JWT>`.
   * The token rides in the fragment, which browsers never send, so it stays out of server logs.
   */
  async demoLoginUrl(baseUrl: string): Promise<string> {
    const token = await this.issueDemoToken();
    return `${baseUrl.replace(/\/+$/, '')}/admin/notifications#token=${encodeURIComponent(token)}`;
  }

  /** The operator console URL that signs the demo user in as an operator (demo mode only). */
  async demoConsoleUrl(baseUrl: string): Promise<string> {
    const token = await this.issueDemoToken(this.options.demo_user, { operator: true });
    return `${baseUrl.replace(/\/+$/, '')}/admin/console#token=${encodeURIComponent(token)}`;
  }

  // The token's alg picks the key; `algorithms` has already refused any alg we have no key for.
  private verificationKey(): Promise<JWTVerifyGetKey> {
    this.keyLoading ??= loadJose().then((jose) => {
      const jwks = this.jwksUrl ? jose.createRemoteJWKSet(this.jwksUrl) : undefined;
      const secret = this.secret;
      return (header: JWSHeaderParameters, token: FlattenedJWSInput) => {
        if (header.alg === 'HS256' && secret) return secret;
        if (jwks) return jwks(header as Parameters<typeof jwks>[0], token);
        throw new UnauthenticatedError('the token algorithm is not accepted');
      };
    });
    return this.keyLoading;
  }
}

function translateVerifyError(err: unknown): Error {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code.startsWith('ERR_J')) {
    if (JWKS_UNAVAILABLE_CODES.has(code)) {
      return new UnavailableError('the token keys cannot be fetched right now', { cause: err });
    }
    const message = code === 'ERR_JWT_EXPIRED' ? 'the token has expired' : 'the token is not valid';
    return new UnauthenticatedError(message, { cause: err });
  }
  if (err instanceof UnauthenticatedError) return err;
  // Anything else comes from fetching the JWKS (connection refused, DNS, TLS).
  return new UnavailableError('the token keys cannot be fetched right now', { cause: err });
}
