/**
 * Shared fixtures of the admin gateway tests: the whole notification service in-process (memory
 * store, admin auth with an HS256 secret), messages sent over gRPC like a producer would, token
 * minting with jose, and condition waits instead of sleeps.
 */
import type { AdminAuthOptions } from '../../../services/notification/admin/auth';
import type { AdminInboxJson } from '../../../services/notification/admin/gateway';
import type { ErrorBody } from '../../../services/notification/admin/http';
import { loadJose } from '../../../services/notification/admin/jose';
import type { NotificationConfigInput } from '../../../services/notification/config';
import { unary } from '../../support/grpc-clients';
import { startNotificationApp, type RunningNotificationApp } from '../../support/notification-app';

export const SECRET = 'admin-gateway-test-secret-0123456789abcdef';
export const ISSUER = 'https://id.example.test';
export const AUDIENCE = 'notification-admin';

/** Auth options the AdminAuth unit tests use unless they say otherwise. */
export function authOptions(overrides: Partial<AdminAuthOptions> = {}): AdminAuthOptions {
  return {
    jwt_secret: SECRET,
    issuer: ISSUER,
    audience: AUDIENCE,
    clock_skew_seconds: 30,
    demo_user: 'demo',
    environment: 'test',
    ...overrides,
  };
}

/** The `admin.auth` section of the notification config, as written in the file. */
export type AdminAuthInput = NonNullable<NonNullable<NotificationConfigInput['admin']>['auth']>;

/** The `admin.auth` section of the services under test: HS256 with SECRET, issuer and audience checked. */
export function adminAuthConfig(overrides: AdminAuthInput = {}): AdminAuthInput {
  return { jwt_secret: SECRET, issuer: ISSUER, audience: AUDIENCE, clock_skew_seconds: 30, ...overrides };
}

/**
 * Starts the real notification service (memory store, free ports) with admin auth configured;
 * `overrides.admin.auth` replaces the default auth section as a whole.
 */
export function startAdminService(overrides: NotificationConfigInput = {}): Promise<RunningNotificationApp> {
  return startNotificationApp({
    ...overrides,
    admin: { auth: overrides.admin?.auth ?? adminAuthConfig() },
  });
}

export interface TokenOptions {
  secret?: string;
  issuer?: string;
  audience?: string;
  /** Absolute expiry, seconds since the epoch; default one hour from now. */
  exp?: number;
  sub?: string | null;
  /** More claims (`roles` for an operator: see operatorToken). */
  claims?: Record<string, unknown>;
}

/** An HS256 token for `sub`, valid for the default auth config unless told otherwise. */
export async function hsToken(sub: string, opts: TokenOptions = {}): Promise<string> {
  const { SignJWT } = await loadJose();
  let jwt = new SignJWT(opts.claims ?? {})
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(opts.issuer ?? ISSUER)
    .setAudience(opts.audience ?? AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(opts.exp ?? Math.floor(Date.now() / 1000) + 3600);
  if (opts.sub !== null) jwt = jwt.setSubject(opts.sub ?? sub);
  return jwt.sign(new TextEncoder().encode(opts.secret ?? SECRET));
}

/** A token naming an operator (`roles: ["notification:operator"]`, the default operator claim). */
export function operatorToken(sub = 'ops-ann', opts: TokenOptions = {}): Promise<string> {
  return hsToken(sub, { ...opts, claims: { roles: ['notification:operator'], ...opts.claims } });
}

/** Resolves once `condition` holds, checking on every turn of the event loop. */
export function until(condition: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const poll = (): void => (condition() ? resolve() : void setImmediate(poll));
    poll();
  });
}

/** A message as InboxService/Send over gRPC returns it (the fields the tests look at). */
export interface SentMessage {
  id: string;
  title: string;
}

/**
 * Sends one message with InboxService/Send over gRPC. Returns after the clock moved past the
 * message's creation millisecond, so the next message is strictly newer ("newest first" is then
 * unambiguous; within one millisecond the inbox orders by id).
 */
export async function sendOverGrpc(
  svc: RunningNotificationApp,
  userId: string,
  title: string,
  body: string,
  metadata: Record<string, unknown> = {},
): Promise<SentMessage> {
  const { response } = await unary<{ message: SentMessage }>(svc.inboxGrpc, 'send', {
    userId,
    title,
    body,
    metadata,
  });
  const answeredAt = Date.now();
  await until(() => Date.now() > answeredAt);
  return response.message;
}

/** fetch() with a bearer token. */
export function authed(token: string, init: RequestInit = {}): RequestInit {
  return {
    ...init,
    headers: { ...(init.headers as Record<string, string>), Authorization: `Bearer ${token}` },
  };
}

/** The body of an admin error response. */
export async function errorOf(res: Response): Promise<ErrorBody> {
  return (await res.json()) as ErrorBody;
}

/** The body of GET /admin/notifications/inbox. */
export async function inboxOf(res: Response): Promise<AdminInboxJson> {
  return (await res.json()) as AdminInboxJson;
}
