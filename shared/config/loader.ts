/**
 * The one config loader both services use. Sources, lowest to highest precedence:
 *   1. schema defaults (and `NODE_ENV` as the default of a top-level `environment` field),
 *   2. the YAML application file, keys under `notification:` / `monitor:`,
 *   3. `SVC_<SECTION>__...` environment variables,
 *   4. the object passed in code (`overrides`).
 * Mappings merge key by key across sources; a list or scalar from a higher source replaces the lower
 * one, except that an indexed env variable (`..._BACKENDS__0__DRIVER`) sets a field inside the list
 * element the lower sources built. The result is validated once and deep-frozen.
 *
 * This is the only module of the project that reads `process.env`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';

import { parseDocument } from 'yaml';
import type { z } from 'zod';

import { readEnvironment } from './env';
import { type ConfigIssue, ConfigError } from './errors';
import { type ConfigPath, configKey, envVarName } from './keys';
import { isSecretPath } from './redact';
import { hasKey } from './schema-walk';
import { cutText } from '../text/cut';

/** The sections of the application file, one per service. */
export type ConfigSection = 'notification' | 'monitor';

/** Every section name; other top-level keys of the application file are typos. */
export const CONFIG_SECTIONS: readonly ConfigSection[] = ['notification', 'monitor'];

/** Default application file, relative to the working directory; used only when it exists. */
export const DEFAULT_CONFIG_FILE = './config/application.yaml';

/** Options of {@link loadConfig}. */
export interface LoadConfigOptions<T> {
  /** Which section of the application file and which `SVC_<SECTION>__` prefix. */
  section: ConfigSection;
  /** The section's schema: defaults, types and cross-field rules. */
  schema: z.ZodType<T>;
  /** The object passed in code; highest precedence. */
  overrides?: unknown;
  /** Environment to read; defaults to `process.env`. Tests pass an explicit object. */
  env?: Readonly<Record<string, string | undefined>>;
  /**
   * Application file path. Omitted: `SVC_CONFIG_FILE`, else `./config/application.yaml` if it exists.
   * `null`: no file at all.
   */
  file?: string | null;
}

type Tree = Record<string, unknown>;

function isPlainObject(value: unknown): value is Tree {
  // By tag, not by prototype identity: objects may come from another realm (vm contexts, jest).
  return Object.prototype.toString.call(value) === '[object Object]';
}

/** Deep copy of plain data, so later sources never write into the caller's objects. */
function clone(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(clone);
  if (isPlainObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, clone(v)]));
  return value;
}

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** The merged raw input plus, for each key, the source that last set it. */
class SourcedInput {
  readonly data: Tree = {};
  private readonly sources = new Map<string, string>();
  readonly issues: ConfigIssue[] = [];

  constructor(private readonly section: ConfigSection) {}

  /** Deep-merges a layer: mappings key by key, anything else replaces. */
  merge(layer: Tree, source: string, path: ConfigPath = [], target: Tree = this.data): void {
    for (const [key, value] of Object.entries(layer)) {
      const at = [...path, key];
      if (FORBIDDEN_KEYS.has(key)) {
        this.issues.push(this.issue(at, 'unknown key', source));
        continue;
      }
      if (value === undefined) continue;
      if (isPlainObject(value)) {
        if (!isPlainObject(target[key])) this.replace(target, key, {}, at, source);
        this.merge(value, source, at, target[key] as Tree);
      } else {
        this.replace(target, key, clone(value), at, source);
      }
    }
  }

  /** Sets one value deep inside, creating the mappings and lists on the way (env patches). */
  set(path: ConfigPath, value: unknown, source: string): void {
    let node: Record<string | number, unknown> = this.data;
    for (let i = 0; i < path.length - 1; i++) {
      const seg = path[i]!;
      const wantList = typeof path[i + 1] === 'number';
      const existing = node[seg];
      const fits = wantList ? Array.isArray(existing) : isPlainObject(existing);
      if (!fits) this.replace(node, seg, wantList ? [] : {}, path.slice(0, i + 1), source);
      node = node[seg] as Record<string | number, unknown>;
    }
    this.replace(node, path[path.length - 1]!, value, path, source);
  }

  /** The source of the value at `path`, or of its nearest ancestor that some source set. */
  sourceOf(path: readonly PropertyKey[]): string {
    for (let n = path.length; n >= 0; n--) {
      const found = this.sources.get(configKey(this.section, path.slice(0, n)));
      if (found) return found;
    }
    return 'default';
  }

  /** The raw input value at `path`, or undefined. */
  valueAt(path: readonly PropertyKey[]): unknown {
    let node: unknown = this.data;
    for (const seg of path) {
      if (node === null || typeof node !== 'object') return undefined;
      node = (node as Record<PropertyKey, unknown>)[seg];
    }
    return node;
  }

  issue(path: readonly PropertyKey[], message: string, source = this.sourceOf(path)): ConfigIssue {
    return { key: configKey(this.section, path), message, source, envVar: envVarName(this.section, path) };
  }

  private replace(
    node: Record<string | number, unknown>,
    seg: string | number,
    value: unknown,
    path: ConfigPath,
    source: string,
  ): void {
    node[seg] = value;
    const key = configKey(this.section, path);
    for (const k of [...this.sources.keys()]) {
      if (k === key || k.startsWith(`${key}.`) || k.startsWith(`${key}[`)) this.sources.delete(k);
    }
    this.record(path, value, source);
  }

  private record(path: ConfigPath, value: unknown, source: string): void {
    this.sources.set(configKey(this.section, path), source);
    if (Array.isArray(value)) value.forEach((v, i) => this.record([...path, i], v, source));
    else if (isPlainObject(value))
      for (const [k, v] of Object.entries(value)) this.record([...path, k], v, source);
  }
}

function resolveFile(
  file: string | null | undefined,
  env: Readonly<Record<string, string | undefined>>,
): { path: string; required: boolean } | undefined {
  if (file === null) return undefined;
  if (file !== undefined) return { path: resolve(file), required: true };
  const fromEnv = env.SVC_CONFIG_FILE;
  if (fromEnv) return { path: resolve(fromEnv), required: true };
  const fallback = resolve(DEFAULT_CONFIG_FILE);
  return existsSync(fallback) ? { path: fallback, required: false } : undefined;
}

function fileError(section: ConfigSection, path: string, message: string): ConfigError {
  return new ConfigError(section, [
    { key: section, message, source: `file ${path}`, envVar: 'SVC_CONFIG_FILE' },
  ]);
}

/** Reads the section of the application file; a missing section is an empty one. */
function readFileSection(section: ConfigSection, path: string, input: SourcedInput): Tree | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    throw fileError(section, path, 'cannot read the application file');
  }
  const doc = parseDocument(text, { merge: true, prettyErrors: false });
  if (doc.errors.length > 0) {
    // Only the position: the offending line may hold a credential.
    const lineOf = (offset: number): number => text.slice(0, offset).split('\n').length;
    const where = doc.errors.map((e) => `line ${lineOf(e.pos[0])} (${e.code})`).join(', ');
    throw fileError(section, path, `invalid YAML at ${where}`);
  }
  const root = doc.toJS() as unknown;
  if (root === null || root === undefined) return undefined;
  const source = `file ${path}`;
  if (!isPlainObject(root))
    throw fileError(section, path, 'expected a mapping with `notification:` / `monitor:` keys');
  for (const key of Object.keys(root)) {
    if (!(CONFIG_SECTIONS as readonly string[]).includes(key)) {
      input.issues.push({
        key,
        message: `unknown top-level key: expected one of ${CONFIG_SECTIONS.join(', ')}`,
        source,
        envVar: 'SVC_CONFIG_FILE',
      });
    }
  }
  const value = root[section];
  if (value === null || value === undefined) return undefined;
  if (!isPlainObject(value)) {
    input.issues.push(input.issue([], 'expected a mapping', source));
    return undefined;
  }
  return value;
}

const ARTICLE: Record<string, string> = {
  number: 'a number',
  int: 'an integer',
  string: 'a string',
  boolean: 'true or false',
  array: 'a list',
  object: 'a mapping',
  record: 'a mapping',
};

/** Zod messages reworded as "expected ..."; schema-level messages (see fields.ts) take precedence. */
function errorMap(iss: z.core.$ZodRawIssue): string | undefined {
  switch (iss.code) {
    case 'invalid_type':
      return `expected ${ARTICLE[iss.expected] ?? iss.expected}`;
    case 'too_small':
      if (iss.origin === 'string')
        return iss.minimum === 1
          ? 'expected a non-empty string'
          : `expected at least ${iss.minimum} characters`;
      if (iss.origin === 'array') return `expected at least ${iss.minimum} item(s)`;
      return `expected a number ${iss.inclusive ? 'of at least' : 'greater than'} ${iss.minimum}`;
    case 'too_big':
      if (iss.origin === 'string') return `expected at most ${iss.maximum} characters`;
      if (iss.origin === 'array') return `expected at most ${iss.maximum} item(s)`;
      return `expected a number ${iss.inclusive ? 'of at most' : 'less than'} ${iss.maximum}`;
    case 'invalid_value':
      return `expected one of ${iss.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'invalid_format':
      return iss.format === 'url' ? 'expected a URL' : `expected ${iss.format} format`;
    case 'invalid_union':
      return 'expected a valid value';
    default:
      return undefined;
  }
}

/** How a found value is shown in an error: short, and never a secret. */
function describeValue(value: unknown, secret: boolean): string {
  if (value === undefined) return 'nothing';
  if (secret) return 'a value that is not shown (secret)';
  if (Array.isArray(value)) return 'a list';
  if (value !== null && typeof value === 'object') return 'a mapping';
  const text = JSON.stringify(value);
  return text.length > 60 ? `${cutText(text, 57)}..."` : text;
}

function toIssues(input: SourcedInput, error: z.ZodError): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const iss of error.issues) {
    if (iss.code === 'unrecognized_keys') {
      for (const key of iss.keys)
        issues.push(input.issue([...iss.path, key], 'unknown key: there is no such setting'));
      continue;
    }
    let message = iss.message;
    const last = iss.path[iss.path.length - 1];
    if (typeof last === 'number' && input.valueAt(iss.path) === undefined) {
      // An indexed env variable skipped an index (`..._BACKENDS__1__...` without `__0__`).
      issues.push(input.issue(iss.path, 'missing list element: list indexes must run from 0 without gaps'));
      continue;
    }
    // Cross-field rules (custom issues) say everything themselves; type and range issues show the value.
    if (iss.code !== 'custom' || message.startsWith('expected')) {
      message += `, got ${describeValue(input.valueAt(iss.path), isSecretPath(iss.path))}`;
    }
    issues.push(input.issue(iss.path, message));
  }
  return issues;
}

/** Every object and list the loader validated and froze: a channel given one of these parses nothing. */
const VALIDATED = new WeakSet<object>();

function deepFreeze<V>(value: V): V {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    VALIDATED.add(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/**
 * Loads, merges, validates and deep-freezes one service's config. Throws {@link ConfigError} listing
 * every problem (unknown keys in any source, invalid values, broken cross-field rules).
 */
export function loadConfig<T>(opts: LoadConfigOptions<T>): Readonly<T> {
  const { section, schema } = opts;
  const env = opts.env ?? process.env;
  const input = new SourcedInput(section);

  if (env.NODE_ENV && hasKey(schema, 'environment')) {
    input.set(['environment'], env.NODE_ENV, 'environment variable NODE_ENV');
  }

  const file = resolveFile(opts.file, env);
  if (file) {
    if (!file.required || existsSync(file.path)) {
      const layer = readFileSection(section, file.path, input);
      if (layer) input.merge(layer, `file ${file.path}`);
    } else {
      throw fileError(section, file.path, 'application file not found');
    }
  }

  const fromEnv = readEnvironment(section, schema, env);
  input.issues.push(...fromEnv.issues);
  for (const patch of fromEnv.patches)
    input.set(patch.path, patch.value, `environment variable ${patch.variable}`);

  if (opts.overrides !== undefined) {
    if (isPlainObject(opts.overrides)) input.merge(opts.overrides, 'code');
    else input.issues.push(input.issue([], 'expected a mapping', 'code'));
  }

  const result = schema.safeParse(input.data, { error: errorMap });
  const issues = [...input.issues, ...(result.success ? [] : toIssues(input, result.error))];
  if (issues.length > 0 || !result.success) throw new ConfigError(section, issues);
  return deepFreeze(result.data);
}

/**
 * The one ZodError -> ConfigError for a section written in code (`MailerModule.configure({...})`):
 * parses `input` with `schema` and throws a ConfigError naming each bad key under `section` and
 * `path` (`notification.sms_backends[0].name`), with source `code` and the env var that would set it.
 * A section the loader validated already (part of what {@link loadConfig} returned) is returned as it
 * is: config is validated once, at the loader.
 */
export function parseSectionInCode<S extends z.ZodType>(
  schema: S,
  input: unknown,
  section: ConfigSection,
  path: ConfigPath = [],
): z.output<S> {
  if (input !== null && typeof input === 'object' && VALIDATED.has(input)) return input as z.output<S>;
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw new ConfigError(
    section,
    result.error.issues.map((issue) => ({
      key: configKey(section, [...path, ...issue.path]),
      message: issue.message,
      source: 'code',
      envVar: envVarName(section, [...path, ...issue.path]),
    })),
  );
}

/**
 * True when the environment says a person reads this process's output through a pipe: FORCE_COLOR
 * set (and not 0/false), as `concurrently` does for `npm start` in a terminal. The logger's `auto`
 * format turns pretty on it. Here because this module is the only reader of `process.env`.
 */
export function outputForcedInteractive(
  env: Readonly<Record<string, string | undefined>> = process.env,
): boolean {
  const force = env.FORCE_COLOR?.trim().toLowerCase();
  return force !== undefined && force !== '' && force !== '0' && force !== 'false';
}
