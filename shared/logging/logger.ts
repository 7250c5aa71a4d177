/**
 * Structured logging (pino). One logger per process, children per component:
 * `logger.child({ component: 'inbox' }).info({ messageId }, 'message sent')`, errors as `{ err }`.
 *
 * Secret-named fields are censored wherever they appear in the first levels of a log object, so a
 * config dump or an error carrying a driver config never prints a credential.
 */
import pino, { type Logger, type LoggerOptions } from 'pino';

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

export interface CreateLoggerOptions {
  name: string;
  level?: string;
  /** Where to write; defaults to stdout. Tests pass a stream to read log lines back. */
  destination?: pino.DestinationStream;
}

/** Creates the process logger. Secrets are censored as `[REDACTED]`. */
export function createLogger(opts: CreateLoggerOptions): Logger {
  const options: LoggerOptions = {
    name: opts.name,
    level: opts.level ?? 'info',
    redact: { paths: redactPaths(), censor: '[REDACTED]' },
    base: { service: opts.name },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}

/** A logger that writes nothing, for tests and library defaults. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
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
