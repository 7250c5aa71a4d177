/**
 * Secret redaction for config dumps and config error messages. The secret field names are the
 * logger's (`SECRET_FIELD_NAMES`), so a value hidden in a log line is hidden here too.
 */
import { SECRET_FIELD_NAMES, redactUrl, redactUrlCredentials } from '../logging/logger';

/** What a secret is replaced with. */
export const REDACTED = '[REDACTED]';

const EXACT = new Set<string>(SECRET_FIELD_NAMES.filter((n) => n !== 'url'));
// `metrics_auth_token`, `smtp_password`, ...: compound names ending in a secret name are secrets too.
const SUFFIXES = [...EXACT].filter(
  (n) => n.includes('_') || n === 'token' || n === 'secret' || n === 'password',
);
// Maps whose every value is a credential (OTLP export headers carry API keys).
const SECRET_MAPS = new Set(['headers']);

/** True when a config key holds a secret value. */
export function isSecretKey(key: string): boolean {
  if (EXACT.has(key)) return true;
  return SUFFIXES.some((s) => key.endsWith(`_${s}`));
}

/** True when every value under this key is a secret (e.g. `headers`). */
export function isSecretMapKey(key: string): boolean {
  return SECRET_MAPS.has(key);
}

/** True when a path of config keys (as from a zod issue) leads to a secret value. */
export function isSecretPath(path: readonly PropertyKey[]): boolean {
  const keys = path.filter((p): p is string => typeof p === 'string');
  return keys.some((k) => isSecretKey(k) || k === 'url' || isSecretMapKey(k));
}

function redactScalar(value: unknown): unknown {
  if (value === undefined || value === null || value === '') return value;
  return REDACTED;
}

function redactSecretValue(value: unknown): unknown {
  // Keep the shape of a token list (its length tells how many are configured), hide every entry.
  if (Array.isArray(value)) return value.map(redactScalar);
  return redactScalar(value);
}

/**
 * Deep copy of `value` with every secret replaced by "[REDACTED]": fields named like
 * `auth_token`, `password`, `api_key`, `dsn`, `private_key`, `api_tokens`, every value of
 * `headers`, the password inside a database `url`, all but the origin of a webhook's `url`, and the
 * credentials of any other URL (`http://probe:<password>@host/`, see redactUrlCredentials). Empty values stay empty, so a dump still
 * shows what is unset.
 */
export function redactSecrets<T>(value: T): T {
  return redact(value, undefined) as T;
}

// Objects whose `url` is itself a credential (a webhook's path often carries its token): only the
// origin is kept, as the alerts area logs them (an alert channel's `webhook: { url }`).
const SECRET_URL_OBJECTS = new Set(['webhook']);

function originOnly(url: unknown): unknown {
  if (typeof url !== 'string' || url === '') return url;
  try {
    return `${new URL(url).origin}/${REDACTED}`;
  } catch {
    return REDACTED;
  }
}

function redact(value: unknown, key: string | undefined): unknown {
  if (
    key !== undefined &&
    SECRET_URL_OBJECTS.has(key) &&
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value)
  ) {
    const copy = redact(value, undefined) as Record<string, unknown>;
    return 'url' in copy ? { ...copy, url: originOnly((value as Record<string, unknown>).url) } : copy;
  }
  if (key !== undefined) {
    if (isSecretKey(key)) return redactSecretValue(value);
    if (key === 'url' && typeof value === 'string') return value === '' ? value : redactUrl(value);
    if (isSecretMapKey(key) && value !== null && typeof value === 'object' && !Array.isArray(value)) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactScalar(v)]));
    }
  }
  if (Array.isArray(value)) return value.map((v) => redact(v, undefined));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redact(v, k)]));
  }
  // Any other URL may carry credentials too (a target's `http_url`, a push gateway's URL).
  if (typeof value === 'string') return redactUrlCredentials(value);
  return value;
}
