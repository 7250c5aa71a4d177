/**
 * Generates deploy/configuration.md, the configuration reference of both services, from their zod
 * schemas: every key with its type, default, environment variable and description.
 *
 *   npm run docs:config            (builds, then writes deploy/configuration.md)
 *   node dist/scripts/gen-config-docs.js --check   (exit 1 when the committed file differs)
 *
 * Keys, types and defaults come from walking the schemas themselves, so a key added to any section
 * appears on the next run. Descriptions are the doc comments (`/** ... *\/`) written above each key
 * in the schema sources: the schemas carry no `.describe()`, and a comment is what the project's
 * style asks for anyway. A schema object is matched to the object literal it was written as by its
 * key names (the literal's keys are a subset of the runtime shape; spreads such as
 * `...sloConfigShape()` contribute their own literal), which needs no naming convention. A
 * `.describe()` on a field, should one appear, takes precedence over the comment.
 */
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

import * as ts from 'typescript';
import type { z } from 'zod';

import { configKey, envVarName } from '../shared/config/keys';
import { schemaDef } from '../shared/config/schema-walk';
import { NotificationConfigSchema } from '../services/notification/config';
import { MonitorConfigSchema } from '../services/monitor/config';

/** The checkout root (this file lives in scripts/, or dist/scripts/ once compiled). */
export const ROOT = ((): string => {
  let dir = __dirname;
  while (!existsSync(join(dir, 'package.json'))) dir = join(dir, '..');
  return dir;
})();

/** Where the generated reference is written, relative to the root. */
export const CONFIG_DOC_PATH = 'deploy/configuration.md';

/** The services' sections, in the order the reference shows them. */
const SECTIONS: readonly { section: 'notification' | 'monitor'; schema: z.ZodType }[] = [
  { section: 'notification', schema: NotificationConfigSchema },
  { section: 'monitor', schema: MonitorConfigSchema },
];

// ---- schema introspection (zod 4's `_zod.def`, through the one reader of shared/config) ----

function descriptionOf(schema: z.ZodType): string | undefined {
  return (schema as unknown as { description?: string }).description;
}

/** What a field says about itself once its wrappers are peeled off. */
interface Field {
  /** The schema that decides the value's shape. */
  core: z.ZodType;
  optional: boolean;
  hasDefault: boolean;
  defaultValue?: unknown;
  /** `duration()`: seconds, or text such as "30s". */
  duration: boolean;
  description?: string;
}

function peel(schema: z.ZodType): Field {
  const field: Field = { core: schema, optional: false, hasDefault: false, duration: false };
  let current = schema;
  for (let i = 0; i < 32; i++) {
    field.description ??= descriptionOf(current);
    const def = schemaDef(current);
    if (def.type === 'default' && def.innerType) {
      if (!field.hasDefault) {
        field.hasDefault = true;
        field.defaultValue = def.defaultValue;
      }
      current = def.innerType;
    } else if ((def.type === 'optional' || def.type === 'nullable') && def.innerType) {
      field.optional = true;
      current = def.innerType;
    } else if (['prefault', 'readonly', 'catch', 'nonoptional'].includes(def.type) && def.innerType) {
      current = def.innerType;
    } else if (def.type === 'pipe' && def.in && def.out) {
      const input = schemaDef(def.in);
      if (input.type === 'transform') current = def.out;
      else {
        const kinds = (input.options ?? []).map((o) => schemaDef(o).type).sort();
        if (input.type === 'union' && kinds.join() === 'number,string') field.duration = true;
        current = def.in;
      }
    } else if (def.type === 'lazy' && def.getter) {
      current = def.getter();
    } else break;
  }
  field.core = current;
  return field;
}

/** A short type name as a reader writes the value. */
function typeName(field: Field): string {
  if (field.duration) return 'duration';
  const def = schemaDef(field.core);
  switch (def.type) {
    case 'string':
      return 'string';
    case 'number': {
      const isInt = (def.checks ?? []).some(
        (c) => c._zod.def.format === 'safeint' || c._zod.def.check === 'number_format',
      );
      return isInt ? 'integer' : 'number';
    }
    case 'int':
      return 'integer';
    case 'boolean':
      return 'boolean';
    case 'enum':
      return Object.values(def.entries ?? {})
        .map((v) => JSON.stringify(v))
        .join(' | ');
    case 'literal':
      return (def.values ?? []).map((v) => JSON.stringify(v)).join(' | ');
    case 'array': {
      const element = peel(def.element!);
      return schemaDef(element.core).type === 'object' ? 'list of mappings' : `list of ${typeName(element)}`;
    }
    case 'record':
      return `mapping of string to ${typeName(peel(def.valueType!))}`;
    case 'object':
      return 'mapping';
    case 'union':
      return (def.options ?? []).map((o) => typeName(peel(o))).join(' or ');
    default:
      return def.type;
  }
}

function formatDefault(field: Field): string {
  if (!field.hasDefault) return field.optional ? 'unset' : 'required';
  const value = field.defaultValue;
  return `\`${JSON.stringify(value)}\``;
}

// ---- doc comments from the schema sources ----

/** One object literal of a schema source: its own key names and the doc comment of each. */
interface SourceLiteral {
  file: string;
  keys: Set<string>;
  comments: Map<string, string>;
}

function cleanComment(raw: string): string {
  return raw
    .replace(/^\/\*\*/, '')
    .replace(/\*\/$/, '')
    .split('\n')
    .map((line) => line.replace(/^\s*\* ?/, '').trim())
    .join(' ')
    .replace(/\{@link\s+([^}\s]+)(?:\s+[^}]*)?\}/g, '`$1`')
    .replace(/\s+/g, ' ')
    .trim();
}

function propertyName(node: ts.ObjectLiteralElementLike): string | undefined {
  if (!ts.isPropertyAssignment(node) && !ts.isShorthandPropertyAssignment(node)) return undefined;
  const name = node.name;
  if (ts.isIdentifier(name) || ts.isStringLiteral(name)) return name.text;
  return undefined;
}

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'gen' && entry.name !== 'node_modules') yield* sourceFiles(path);
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) yield path;
  }
}

/** Every object literal with at least one doc-commented key in the files that build zod objects. */
export function readSourceLiterals(root: string = ROOT): SourceLiteral[] {
  const literals: SourceLiteral[] = [];
  for (const dir of ['shared', 'services']) {
    for (const file of sourceFiles(join(root, dir))) {
      const text = readFileSync(file, 'utf8');
      if (!/\bz\s*\.\s*(strictObject|object|looseObject)\s*\(/.test(text) && !/Shape\s*\(/.test(text))
        continue;
      const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
      const visit = (node: ts.Node): void => {
        if (ts.isObjectLiteralExpression(node)) {
          const keys = new Set<string>();
          const comments = new Map<string, string>();
          for (const prop of node.properties) {
            const name = propertyName(prop);
            if (name === undefined) continue;
            keys.add(name);
            const ranges = ts.getLeadingCommentRanges(text, prop.getFullStart()) ?? [];
            const doc = ranges.map((r) => text.slice(r.pos, r.end)).filter((c) => c.startsWith('/**'));
            if (doc.length > 0) comments.set(name, cleanComment(doc[doc.length - 1]!));
          }
          if (comments.size > 0) literals.push({ file: relative(root, file), keys, comments });
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
  }
  return literals;
}

/** The doc comment of `key` in an object whose keys are `shape`: from the literal that matches best. */
function commentFor(
  literals: readonly SourceLiteral[],
  shape: ReadonlySet<string>,
  key: string,
): string | undefined {
  let best: { overlap: number; comment: string } | undefined;
  for (const literal of literals) {
    const comment = literal.comments.get(key);
    if (comment === undefined) continue;
    if (![...literal.keys].every((k) => shape.has(k))) continue;
    const overlap = literal.keys.size;
    if (!best || overlap > best.overlap) best = { overlap, comment };
  }
  return best?.comment;
}

// ---- the reference ----

/** One row of the reference: a key below a service section. */
export interface ConfigDocRow {
  key: string;
  envVar: string;
  type: string;
  default: string;
  description: string;
  /** True for a mapping (a heading of the keys below it), false for a value. */
  mapping: boolean;
}

/** Every key of `schema` under `section`, depth first in schema order; list elements as `[i]`. */
export function configRows(
  section: string,
  schema: z.ZodType,
  literals: readonly SourceLiteral[] = readSourceLiterals(),
): ConfigDocRow[] {
  const rows: ConfigDocRow[] = [];
  const walk = (objectSchema: z.ZodType, path: (string | number)[], keyPath: (string | number)[]): void => {
    const shape = schemaDef(objectSchema).shape ?? {};
    const names = new Set(Object.keys(shape));
    for (const [name, child] of Object.entries(shape)) {
      const field = peel(child);
      const def = schemaDef(field.core);
      const description = field.description ?? commentFor(literals, names, name) ?? '';
      const at = [...path, name];
      const shownAt = [...keyPath, name];
      const isObject = def.type === 'object';
      const element = def.type === 'array' ? peel(def.element!) : undefined;
      const isObjectList = element !== undefined && schemaDef(element.core).type === 'object';
      rows.push({
        key: configKey(section, shownAt),
        envVar: envVarName(section, at),
        type: typeName(field),
        default: isObject ? (field.optional ? 'unset' : '') : formatDefault(field),
        description,
        mapping: isObject,
      });
      if (isObject) walk(field.core, at, shownAt);
      if (isObjectList) walk(element.core, [...at, 'i'], [...shownAt, 'i']);
    }
  };
  walk(peel(schema).core, [], []);
  // `[i]` shown as an index placeholder: `mailer.backends[i].driver`, `..._BACKENDS__<i>__DRIVER`.
  return rows.map((r) => ({
    ...r,
    key: r.key.replace(/\.i(?=\.|$)/g, '[i]'),
    envVar: r.envVar.replace(/__I(?=__|$)/g, '__<i>'),
  }));
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function table(rows: readonly ConfigDocRow[]): string[] {
  return [
    '| Key | Type | Default | Environment variable | Description |',
    '| --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| \`${cell(r.key)}\` | ${cell(r.type)} | ${cell(r.default)} | \`${r.envVar}\` | ${cell(r.description)} |`,
    ),
    '',
  ];
}

/** The whole of deploy/configuration.md. */
export function generateConfigDocs(root: string = ROOT): string {
  const literals = readSourceLiterals(root);
  const out: string[] = [
    '# Configuration reference',
    '',
    '<!-- Generated by `npm run docs:config` (scripts/gen-config-docs.ts) from the config schemas; do not edit.',
    '     test/ops/config-docs.test.ts fails when this file differs from a fresh generation. -->',
    '',
    'Every key of both services, generated from their schemas (`services/notification/config.ts`,',
    '`services/monitor/config.ts` and the sections they compose). Sources, lowest to highest precedence:',
    'defaults, the application file (`./config/application.yaml` or `SVC_CONFIG_FILE`, keys under',
    '`notification:` / `monitor:`), environment variables, the object passed in code. See',
    '[`config/application.example.yaml`](../config/application.example.yaml) for an annotated file.',
    '',
    'Environment variables: `SVC_<SECTION>__<KEY>__<SUBKEY>`; `<i>` is a list index from 0',
    '(`SVC_NOTIFICATION__MAILER__BACKENDS__0__DRIVER=smtp`); a whole list or mapping may be given as',
    'JSON (`SVC_MONITOR__TARGETS=\'[{"name":"notification","grpc_address":"notification:50051"}]\'`), a list',
    'of strings also comma-separated. `duration` values are seconds or text such as `30s`, `5m`, `1h`.',
    'Default `unset` means the key is optional and off when absent; `required` means a list element',
    'must set it. Cross-field rules (for example "production needs `server.api_tokens`") are in the',
    'descriptions and in the error the service prints at start.',
    '',
  ];
  for (const { section, schema } of SECTIONS) {
    out.push(`## \`${section}\``, '');
    // Grouped by top-level key: single values share one table, each section or list gets a heading.
    const groups = new Map<string, ConfigDocRow[]>();
    for (const row of configRows(section, schema, literals)) {
      const top = row.key.slice(section.length + 1).split(/[.[]/)[0]!;
      groups.set(top, [...(groups.get(top) ?? []), row]);
    }
    const singles = [...groups.values()].filter((g) => g.length === 1 && !g[0]!.mapping).map((g) => g[0]!);
    if (singles.length > 0) {
      out.push('### Top-level keys', '');
      out.push(...table(singles));
    }
    for (const rows of groups.values()) {
      const head = rows[0]!;
      if (rows.length === 1 && !head.mapping) continue;
      out.push(`### \`${head.key}\``, '');
      if (head.description) out.push(head.description, '');
      out.push(`Type: ${head.type}. Environment: \`${head.envVar}\` (JSON) or \`${head.envVar}__*\`.`, '');
      out.push(...table(rows.slice(1)));
    }
  }
  return `${out.join('\n').trimEnd()}\n`;
}

if (require.main === module) {
  const target = join(ROOT, CONFIG_DOC_PATH);
  const fresh = generateConfigDocs();
  if (process.argv.includes('--check')) {
    const current = existsSync(target) ? readFileSync(target, 'utf8') : '';
    if (current !== fresh) {
      console.error(`${CONFIG_DOC_PATH} is out of date: run npm run docs:config`);
      process.exit(1);
    }
    console.log(`${CONFIG_DOC_PATH} is up to date`);
  } else {
    writeFileSync(target, fresh);
    console.log(`wrote ${CONFIG_DOC_PATH}`);
  }
}
