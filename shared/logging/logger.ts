/**
 * Structured logging (pino). One logger per process, children per component:
 * `logger.child({ component: 'inbox' }).info({ messageId }, 'message sent')`, errors as `{ err }`.
 *
 * Secret-named fields are censored wherever they appear in the first levels of a log object, so a
 * config dump or an error carrying a driver config never prints a credential. Lines are JSON (for
 * collectors) or pretty (for people; the default on a terminal): see {@link createLogger}.
 */
import { trace } from '@opentelemetry/api';
import pino, { type Logger, type LoggerOptions } from 'pino';
import pinoPretty from 'pino-pretty';

export type { Logger } from 'pino';

/** Field names that hold secrets anywhere in config or payloads. Shared with the config redactor. */
export const SECRET_FIELD_NAMES = [
  'auth_token',
  'authToken',
  'server_key',
  'serverKey',
  'password',
  'pass',
  'api_key',
  'apiKey',
  'api_tokens',
  'apiTokens',
  'dsn',
  'private_key',
  'privateKey',
  'secret',
  'jwt_secret',
  'signing_key',
  'authorization',
  'token',
  'url', // database URLs carry passwords; only logged through redactUrl()
] as const;

function redactPaths(): string[] {
  const paths: string[] = [];
  for (const name of SECRET_FIELD_NAMES) {
    if (name === 'url') continue;
    paths.push(name, `*.${name}`, `*.*.${name}`, `*.*.*.${name}`, `*.*.*.*.${name}`);
  }
  paths.push('req.headers.authorization', 'headers.authorization', 'metadata.authorization');
  return paths;
}

/**
 * `trace_id` and `span_id` of the active span (OpenTelemetry's context: our Tracer's spans and the
 * gRPC and pg instrumentations' alike), so a log line written inside a span can be found from its
 * trace. Nothing is added outside a span.
 */
export function traceFields(): { trace_id?: string; span_id?: string } {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const ctx = span.spanContext();
  if (!trace.isSpanContextValid(ctx)) return {};
  return { trace_id: ctx.traceId, span_id: ctx.spanId };
}

/** How log lines are written: JSON objects, readable lines, or `auto` (readable on a terminal). */
export type LogFormat = 'json' | 'pretty' | 'auto';

/** Options of {@link createLogger}. */
export interface CreateLoggerOptions {
  name: string;
  level?: string;
  /** `auto` (default): pretty when stdout is a terminal, else JSON. Redaction applies to both. */
  format?: LogFormat;
  /** Where to write; defaults to stdout. Tests pass a stream to read log lines back. */
  destination?: pino.DestinationStream;
  /**
   * A person reads the output although it is a pipe (`npm start` runs the services through
   * `concurrently`, which pipes them to the terminal and says so with FORCE_COLOR). Decides `auto`
   * and colours; by default, whether the destination is a terminal.
   */
  interactive?: boolean;
}

/** True when the lines go to a terminal (a person reads them) rather than a pipe or a file. */
function isTerminal(destination: pino.DestinationStream | undefined): boolean {
  const out = (destination ?? process.stdout) as { isTTY?: boolean };
  return out.isTTY === true;
}

/** The format `auto` resolves to for a destination. */
export function resolveLogFormat(format: LogFormat | undefined, interactive: boolean): 'json' | 'pretty' {
  if (format === 'json' || format === 'pretty') return format;
  return interactive ? 'pretty' : 'json';
}

/**
 * Creates the process logger. Secrets are censored as `[REDACTED]` by pino itself, before a line
 * reaches either format. The pretty format runs pino-pretty in-process (not as a worker transport),
 * so lines are written in order and none is lost at exit.
 */
export function createLogger(opts: CreateLoggerOptions): Logger {
  const options: LoggerOptions = {
    name: opts.name,
    level: opts.level ?? 'info',
    redact: { paths: redactPaths(), censor: '[REDACTED]' },
    // Field names cannot find a password inside a URL (`http://probe:<password>@host/`), whatever
    // field or message it is in: the values themselves are scrubbed before the line is written.
    // An error's message and stack may quote a URL too (undici refuses a URL with credentials by
    // quoting it whole).
    // A PostgreSQL error's `detail` quotes the row it stopped on (`Key (recipient)=(ann@example.com)
    // already exists`) and PGlite's carries the bound `params`: personal data, dropped; the code,
    // constraint and table stay. A data exception (SQLSTATE class 22) quotes the value it could not
    // take in its message (`invalid input syntax for type integer: "..."`). (knex keeps the bound
    // values out of its part of the message: `compileSqlOnError: false`, shared/storage/database.ts.)
    // The error object keeps them; only what is written loses them.
    serializers: {
      err: (err: unknown) => {
        const fields = { ...(pino.stdSerializers.err(err as Error) as object) } as Record<string, unknown>;
        if (fields.detail !== undefined) fields.detail = '[REDACTED]';
        if (fields.params !== undefined) fields.params = '[REDACTED]';
        // knex's timeout errors carry the statement's values as `bindings`.
        if (fields.bindings !== undefined) fields.bindings = '[REDACTED]';
        if (typeof fields.code === 'string' && /^22[0-9A-Z]{3}$/.test(fields.code)) {
          for (const key of ['message', 'stack'] as const) {
            const text = fields[key];
            if (typeof text === 'string') fields[key] = text.replace(/"(?:[^"]|"")*"/g, '"[REDACTED]"');
          }
        }
        return scrubUrlCredentials(fields, 0);
      },
    },
    hooks: {
      logMethod(args, method) {
        method.apply(this, args.map((a) => scrubUrlCredentials(a, 0)) as Parameters<typeof method>);
      },
    },
    base: { service: opts.name },
    timestamp: pino.stdTimeFunctions.isoTime,
    mixin: traceFields,
  };
  const interactive = opts.interactive ?? isTerminal(opts.destination);
  if (resolveLogFormat(opts.format, interactive) === 'pretty') {
    const pretty = pinoPretty({
      destination: opts.destination ?? 1,
      sync: true,
      colorize: interactive,
      translateTime: 'SYS:HH:MM:ss.l',
      // The process name is on every line already (`name`); `service` would repeat it.
      ignore: 'pid,hostname,service',
      singleLine: true,
    });
    return pino(options, pretty);
  }
  // Synchronous writes: pino's default destination writes asynchronously and `process.exit` drops a
  // line still in flight (its flush callback fires at once and the exit hook skips the write under
  // way), which lost the last line of a clean shutdown ("stopped") under load in CI. A service logs a
  // few lines per operation at most, so the cost of writing them in place is small.
  return pino(options, opts.destination ?? pino.destination({ dest: 1, sync: true }));
}

/** A logger that writes nothing, for tests and library defaults. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

// `scheme://userinfo@`: the userinfo of a URL, wherever it sits in a text.
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/?#@'"<>]+)@/gi;

/**
 * `text` with the credentials of every URL in it replaced by `[REDACTED]`: the password of
 * `user:password@` (the user name stays, it tells which account), or the whole userinfo when there is
 * no password (`https://<token>@host`, a DSN's key). The one rule for URLs in logs and config dumps.
 */
export function redactUrlCredentials(text: string): string {
  if (!text.includes('@') || !text.includes('://')) return text;
  return text.replace(URL_USERINFO, (_m, scheme: string, userinfo: string) => {
    const colon = userinfo.indexOf(':');
    return colon < 0 ? `${scheme}[REDACTED]@` : `${scheme}${userinfo.slice(0, colon)}:[REDACTED]@`;
  });
}

/** Levels of a log argument searched for URLs (config dumps are redacted before they are logged). */
const MAX_SCRUB_DEPTH = 6;

/**
 * A log argument with {@link redactUrlCredentials} applied to its strings, plain objects and arrays
 * (copied only where something changed); errors and other instances are left to their serializers.
 */
function scrubUrlCredentials(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return redactUrlCredentials(value);
  if (value === null || typeof value !== 'object' || depth >= MAX_SCRUB_DEPTH) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    value.forEach((v, i) => {
      const s = scrubUrlCredentials(v, depth + 1);
      if (s !== v) (copy ??= [...value])[i] = s;
    });
    return copy ?? value;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return value;
  let copy: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(value)) {
    const s = scrubUrlCredentials(v, depth + 1);
    if (s !== v) (copy ??= { ...(value as Record<string, unknown>) })[k] = s;
  }
  return copy ?? value;
}

/** Strips the password from a connection URL so it can be logged. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '[REDACTED]';
    return u.toString();
  } catch {
    return '[unparseable url]';
  }
}
