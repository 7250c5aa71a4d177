/**
 * Shared fixtures of the admin gateway tests: a real HTTP server on port 0 routing to AdminGateway
 * over the FakeInbox test double, and token minting with jose.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AdminAuth, type AdminAuthOptions } from '../../../services/notification/admin/auth';
import { AdminGateway, type AdminInboxJson } from '../../../services/notification/admin/gateway';
import type { ErrorBody } from '../../../services/notification/admin/http';
import { loadJose } from '../../../services/notification/admin/jose';
import { silentLogger } from '../../../shared/logging/logger';
import type { InboxServiceContract } from '../../../services/notification/inbox/types';
import { FakeInbox } from './fake-inbox';

export const SECRET = 'admin-gateway-test-secret-0123456789abcdef';
export const ISSUER = 'https://id.example.test';
export const AUDIENCE = 'notification-admin';

/** Auth options the tests use unless they say otherwise. */
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

export interface TokenOptions {
  secret?: string;
  issuer?: string;
  audience?: string;
  /** Absolute expiry, seconds since the epoch; default one hour from now. */
  exp?: number;
  sub?: string | null;
}

/** An HS256 token for `sub`, valid for the default auth options unless told otherwise. */
export async function hsToken(sub: string, opts: TokenOptions = {}): Promise<string> {
  const { SignJWT } = await loadJose();
  let jwt = new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(opts.issuer ?? ISSUER)
    .setAudience(opts.audience ?? AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(opts.exp ?? Math.floor(Date.now() / 1000) + 3600);
  if (opts.sub !== null) jwt = jwt.setSubject(opts.sub ?? sub);
  return jwt.sign(new TextEncoder().encode(opts.secret ?? SECRET));
}

export interface RunningGateway {
  baseUrl: string;
  inbox: FakeInbox;
  auth: AdminAuth;
  server: Server;
  /** Requests the fallback (non-admin) handler received. */
  fallbackHits: string[];
  close(): Promise<void>;
}

/** Starts http.createServer on port 0: AdminGateway first, then a fallback that answers 418. */
export async function startGateway(
  opts: {
    auth?: AdminAuthOptions;
    inbox?: InboxServiceContract;
    heartbeatMs?: number;
    maxPageSize?: number;
  } = {},
): Promise<RunningGateway> {
  const inbox = (opts.inbox as FakeInbox | undefined) ?? new FakeInbox(opts.maxPageSize ?? 50);
  const auth = new AdminAuth(opts.auth ?? authOptions());
  const gateway = new AdminGateway({
    inbox,
    auth,
    logger: silentLogger(),
    maxPageSize: opts.maxPageSize ?? 50,
    heartbeatMs: opts.heartbeatMs ?? 60_000,
  });
  const fallbackHits: string[] = [];
  const server = createServer((req, res) => {
    void gateway.handle(req, res).then((handled) => {
      if (handled) return;
      fallbackHits.push(req.url ?? '');
      res.writeHead(418).end('fallback');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    inbox,
    auth,
    server,
    fallbackHits,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
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
