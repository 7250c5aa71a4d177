/**
 * The `SVC_<SECTION>__` environment mapping: `__` nests, a numeric segment is a list index, a whole
 * list or mapping may be given as JSON, and scalars are coerced to the type the schema expects.
 */
import type { z } from 'zod';

import type { ConfigIssue } from './errors';
import { type ConfigPath, configKey, envVarName } from './keys';
import { childSchema, elementSchema, leafKind, scalarKindOf } from './schema-walk';

/** One environment variable turned into a value at a config path. */
export interface EnvPatch {
  readonly path: ConfigPath;
  readonly value: unknown;
  readonly variable: string;
}

const NUMBER = /^[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?$/i;
const TRUE = new Set(['true', '1', 'yes', 'on']);
const FALSE = new Set(['false', '0', 'no', 'off']);

type Coerced = { ok: true; value: unknown } | { ok: false; message: string };

function coerceScalar(schema: z.ZodType, raw: string): unknown {
  const kind = leafKind(schema);
  const text = raw.trim();
  // Anything that does not coerce stays a string, so validation reports `got "abc"`.
  if (kind === 'number') return NUMBER.test(text) ? Number(text) : raw;
  if (kind === 'boolean') {
    if (TRUE.has(text.toLowerCase())) return true;
    if (FALSE.has(text.toLowerCase())) return false;
  }
  return raw;
}

function parseJson(raw: string): Coerced {
  try {
    return { ok: true, value: JSON.parse(raw) as unknown };
  } catch {
    // The text may hold credentials (a backend list), so it is never echoed.
    return { ok: false, message: 'is not valid JSON' };
  }
}

function coerce(schema: z.ZodType, raw: string): Coerced {
  const text = raw.trim();
  switch (leafKind(schema)) {
    case 'list': {
      if (text.startsWith('[')) return parseJson(text);
      const element = elementSchema(schema);
      const elementKind = element ? scalarKindOf(element) : 'other';
      if (element && (elementKind === 'string' || elementKind === 'number' || elementKind === 'boolean')) {
        const items = text === '' ? [] : text.split(',').map((s) => s.trim());
        return { ok: true, value: items.map((s) => coerceScalar(element, s)) };
      }
      return { ok: false, message: 'expected a JSON list such as [{"name": "..."}]' };
    }
    case 'mapping':
      if (text.startsWith('{')) return parseJson(text);
      return { ok: false, message: 'expected a JSON object such as {"key": "value"}' };
    case 'other':
      return text.startsWith('[') || text.startsWith('{') ? parseJson(text) : { ok: true, value: raw };
    default:
      return { ok: true, value: coerceScalar(schema, raw) };
  }
}

/**
 * Reads every `SVC_<SECTION>__*` variable of `env` against `schema`. Unknown keys, bad JSON and
 * near-miss prefixes (`SVC_NOTIFICATION_INBOX__...`) are issues, never silently ignored. Patches
 * come back shortest path first, so a whole list set as JSON is applied before its indexed elements.
 */
export function readEnvironment(
  section: string,
  schema: z.ZodType,
  env: Readonly<Record<string, string | undefined>>,
): { patches: EnvPatch[]; issues: ConfigIssue[] } {
  const base = `SVC_${section.toUpperCase()}`;
  const prefix = `${base}__`;
  const patches: EnvPatch[] = [];
  const issues: ConfigIssue[] = [];
  const unknown = (variable: string, key: string, message: string): void => {
    issues.push({ key, message, source: `environment variable ${variable}`, envVar: variable });
  };

  for (const variable of Object.keys(env).sort()) {
    const raw = env[variable];
    if (raw === undefined || !variable.startsWith(base)) continue;
    if (!variable.startsWith(prefix)) {
      unknown(variable, section, `unknown environment variable ${variable}: settings are ${prefix}<KEY>`);
      continue;
    }
    const segments = variable.slice(prefix.length).split('__');
    const path: (string | number)[] = [];
    let schemaAt: z.ZodType | undefined = schema;
    for (const segment of segments) {
      const parent: z.ZodType = schemaAt;
      const key = segment.toLowerCase();
      schemaAt = key === '' ? undefined : childSchema(parent, key);
      path.push(schemaAt && leafKind(parent) === 'list' ? Number(key) : key);
      if (!schemaAt) break;
    }
    if (!schemaAt) {
      unknown(variable, configKey(section, path), 'unknown key: there is no such setting');
      continue;
    }
    const coerced = coerce(schemaAt, raw);
    if (!coerced.ok) {
      issues.push({
        key: configKey(section, path),
        message: coerced.message,
        source: `environment variable ${variable}`,
        envVar: envVarName(section, path),
      });
      continue;
    }
    patches.push({ path, value: coerced.value, variable });
  }
  patches.sort((a, b) => a.path.length - b.path.length);
  return { patches, issues };
}
