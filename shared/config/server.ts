/**
 * Config sections both services share: `server` (ports, auth tokens, limits, shutdown), `log` and
 * `database`. Each service builds them with its own defaults.
 */
import { z } from 'zod';

import { bool, nonEmptyString, nonNegativeInt, port, positiveInt } from './fields';

/** Default ports of one service, and the scopes its API tokens may hold. */
export interface ServerDefaults {
  grpcPort: number;
  httpPort: number;
  /** The service's scope names (its rpc layer's scope table); `*` is always accepted too. */
  scopes?: readonly string[];
}

/** A token's name: the caller's identity in logs and records (no `:`, so never a plain token's `token:...`). */
const TOKEN_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * One entry of `server.api_tokens`: a plain token (every scope), or `{ name, token, scopes }`. The
 * name identifies the caller (logs, delivery records); two entries may share a name (a rotation).
 */
function apiTokenSchema(scopes: readonly string[] | undefined) {
  const known = scopes === undefined ? undefined : new Set(['*', ...scopes]);
  return z.union(
    [
      nonEmptyString(),
      z.strictObject({
        name: z
          .string()
          .regex(TOKEN_NAME, { error: 'expected a name of letters, digits, ".", "_" or "-" (at most 64)' }),
        token: nonEmptyString(),
        scopes: z
          .array(
            z.string().refine((s) => known === undefined || known.has(s), {
              error: `expected one of the service's scopes: ${['*', ...(scopes ?? [])].join(', ')}`,
            }),
          )
          .min(1, { error: 'expected at least one scope ("*" for every scope)' }),
      }),
    ],
    { error: 'expected a token, or { name, token, scopes }' },
  );
}

const MIB = 1024 * 1024;

/** The `server` section: where the two ports listen and what guards them. */
export function serverSectionSchema(defaults: ServerDefaults) {
  return z
    .strictObject({
      /** Interface both ports bind to. */
      host: nonEmptyString().default('0.0.0.0'),
      grpc_port: port().default(defaults.grpcPort),
      http_port: port().default(defaults.httpPort),
      /**
       * Bearer tokens accepted on RPCs (secret): plain tokens (every scope), or
       * `{ name, token, scopes }` with scopes of the service's scope table. Empty: the service is
       * open and warns once at start.
       */
      api_tokens: z.array(apiTokenSchema(defaults.scopes)).default(() => []),
      /** Largest accepted request body / message, bytes (methods that need more raise their own). */
      max_request_bytes: positiveInt().default(4 * MIB),
      /**
       * Request bytes held at once by every call of both ports together; beyond it a call gets
       * RESOURCE_EXHAUSTED (HTTP 429). Raised to the largest method limit when below it.
       */
      max_in_flight_request_bytes: positiveInt().default(128 * MIB),
      /** Time between reporting NOT_SERVING and closing the listeners, so balancers notice. */
      shutdown_drain_ms: nonNegativeInt().default(500),
      /** Upper bound for in-flight calls to finish before streams and connections are cut. */
      shutdown_timeout_ms: nonNegativeInt().default(10000),
      /**
       * Serve RPCs without `api_tokens` in production. Off by default: a production service without
       * tokens refuses to start (see {@link requireApiTokensInProduction}).
       */
      allow_unauthenticated: bool().default(false),
      /** Open server streams (WatchInbox, health Watch excluded) across both ports; beyond: RESOURCE_EXHAUSTED. */
      max_concurrent_streams: positiveInt().default(10000),
      /** Open connections on the HTTP port; beyond: 429 with Retry-After, then the connection closes. */
      http_max_connections: positiveInt().default(10000),
      /** Time a client has to send its request headers on the HTTP port (slowloris bound), ms. */
      http_headers_timeout_ms: positiveInt().default(10000),
      /**
       * Time a client has to send a whole request, headers and body, on the HTTP port (408 after),
       * and a gRPC call its request message and half-close (DEADLINE_EXCEEDED after), ms.
       */
      http_request_timeout_ms: positiveInt().default(30000),
    })
    .prefault({});
}

/** How log lines are written: see {@link logSectionSchema}. */
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;

/** The `log` section. */
export function logSectionSchema() {
  return z
    .strictObject({
      level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
      /**
       * `json`: one JSON object per line (for log collectors); `pretty`: coloured, readable lines;
       * `auto` (default): pretty when standard output is a terminal, JSON otherwise.
       */
      format: z.enum(LOG_FORMATS).default('auto'),
    })
    .prefault({});
}

/** Default of `database.statement_timeout_ms`: far past any statement of a request or a job pass. */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 60_000;

/**
 * Default of `database.idle_in_transaction_timeout_ms`: no transaction of ours waits between its
 * statements for anything but its own code, so a minute idle means its caller is stuck.
 */
export const DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS = 60_000;

const DATABASE_URL = /^postgres(?:ql)?:\/\/\S+$/;

/** The `database` section: a PostgreSQL URL, or embedded PGlite in `data_dir` when the URL is empty. */
export function databaseSectionSchema(service: string) {
  return z
    .strictObject({
      /** `postgres://user:password@host:5432/db` (secret: the password is redacted in logs). Empty: PGlite. */
      url: z
        .string()
        .refine((v) => v === '' || DATABASE_URL.test(v), {
          error: 'expected a postgres:// or postgresql:// URL, or empty for the embedded database',
        })
        .default(''),
      /** Data directory of the embedded database (used when `url` is empty); `:memory:` keeps it in memory. */
      data_dir: nonEmptyString().default(`./data/${service}`),
      pool_max: positiveInt().default(10),
      /**
       * Longest a statement of the pool may run, server-side (PostgreSQL's `statement_timeout`): one
       * that waits behind a lock or runs away is cancelled (SQLSTATE 57014) and its connection stays
       * usable, instead of holding a pool connection for ever. 0: no bound. Not sent through a pooler
       * (`session_url` set: pgbouncer refuses the startup parameter): set it on the role there
       * (`ALTER ROLE ... SET statement_timeout`). Migrations and session connections (the migration
       * lock, job leases, LISTEN) run without it.
       */
      statement_timeout_ms: nonNegativeInt()
        .max(86_400_000, { error: 'expected at most 86400000' })
        .default(DEFAULT_STATEMENT_TIMEOUT_MS),
      /**
       * Longest a transaction of the pool may sit idle between its statements, server-side
       * (PostgreSQL's `idle_in_transaction_session_timeout`): past it the server ends the session
       * (SQLSTATE 25P03), so a transaction left open by a stuck caller gives back its locks and its
       * connection instead of holding them for ever; the pool replaces the connection. 0: no bound.
       * Not sent through a pooler (`session_url` set): set it on the role there. Session connections
       * (the migration lock, job leases, LISTEN) run without it.
       */
      idle_in_transaction_timeout_ms: nonNegativeInt()
        .max(86_400_000, { error: 'expected at most 86400000' })
        .default(DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS),
      /**
       * A direct PostgreSQL URL for the connections that must keep one server session: LISTEN (events
       * across replicas), job leases and the migration lock (session advisory locks). Set it when
       * `url` goes through a pooler in transaction mode (pgbouncer), which would hand those sessions'
       * statements to other server connections; empty: `url` serves them too.
       */
      session_url: z
        .string()
        .refine((v) => DATABASE_URL.test(v), { error: 'expected a postgres:// or postgresql:// URL' })
        .optional(),
    })
    .refine((d) => d.session_url === undefined || d.url !== '', {
      error: 'session_url needs url (the embedded database has no sessions to route)',
      path: ['session_url'],
    })
    .prefault({});
}

/**
 * RPCs are closed by default in production: with `environment: production` and no
 * `server.api_tokens`, the config is invalid (the process exits 2 naming the key) unless
 * `server.allow_unauthenticated: true` says so. Each service's schema calls this from its
 * `superRefine`. Other environments only get the server's start-up warning.
 */
export function requireApiTokensInProduction(
  config: {
    environment: string;
    server: { api_tokens: readonly unknown[]; allow_unauthenticated: boolean };
  },
  ctx: z.RefinementCtx,
): void {
  const { server } = config;
  if (config.environment !== 'production' || server.api_tokens.length > 0 || server.allow_unauthenticated)
    return;
  ctx.addIssue({
    code: 'custom',
    path: ['server', 'api_tokens'],
    message:
      'in production RPCs need auth: set server.api_tokens (bearer tokens), or set ' +
      'server.allow_unauthenticated: true to serve them open on purpose',
  });
}

/** The `server` section after validation. */
export type ServerConfig = z.infer<ReturnType<typeof serverSectionSchema>>;
/** The `log` section after validation. */
export type LogConfig = z.infer<ReturnType<typeof logSectionSchema>>;
/** The `database` section after validation. */
export type DatabaseConfig = z.infer<ReturnType<typeof databaseSectionSchema>>;

/** Default of the top-level `environment` field when `NODE_ENV` is unset. */
export const DEFAULT_ENVIRONMENT = 'development';

/** The top-level `environment` field: a free-form name; `production` turns on stricter checks. */
export function environmentSchema() {
  return nonEmptyString().default(DEFAULT_ENVIRONMENT);
}
