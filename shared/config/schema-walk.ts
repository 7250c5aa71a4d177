/**
 * Just enough introspection of zod schemas for the environment mapping: find the schema that a key
 * path leads to, and what kind of value it expects, so `"30"` becomes 30 and typos are caught.
 */
import type { z } from 'zod';

/** What an env string must be coerced to before validation. */
export type LeafKind = 'number' | 'boolean' | 'string' | 'list' | 'mapping' | 'other';

/**
 * A zod 4 schema's definition (`_zod.def`), the fields this project reads: the one introspection of
 * schemas, for the environment mapping here, the config reference (scripts/gen-config-docs.ts) and
 * the secrets suite's key walk.
 */
export interface SchemaDef {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  keyType?: z.ZodType;
  valueType?: z.ZodType;
  getter?: () => z.ZodType;
  options?: readonly z.ZodType[];
  entries?: Record<string, string | number>;
  values?: unknown[];
  defaultValue?: unknown;
  checks?: { _zod: { def: { check: string; format?: string } } }[];
}

/** The definition of `schema` (zod 4's `_zod.def`). */
export function schemaDef(schema: z.ZodType): SchemaDef {
  return (schema as unknown as { _zod: { def: SchemaDef } })._zod.def;
}

const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'readonly', 'catch', 'nonoptional']);

/** Strips wrappers (optional, default, pipes, ...) down to the schema that decides the value's shape. */
export function unwrap(schema: z.ZodType): z.ZodType {
  let current = schema;
  for (let i = 0; i < 32; i++) {
    const def = schemaDef(current);
    if (WRAPPERS.has(def.type) && def.innerType) current = def.innerType;
    else if (def.type === 'pipe' && def.in && def.out)
      // `.transform()` is pipe(in=schema, out=transform); `z.preprocess` is pipe(in=transform, out=schema).
      current = schemaDef(def.in).type === 'transform' ? def.out : def.in;
    else if (def.type === 'lazy' && def.getter) current = def.getter();
    else return current;
  }
  return current;
}

/** The schema's own type name after unwrapping ("object", "array", "number", ...). */
export function kindOf(schema: z.ZodType): string {
  return schemaDef(unwrap(schema)).type;
}

/**
 * The child schema for one path segment, or undefined when the segment is not a key of that schema
 * (an unknown key). A numeric segment under a list is an index.
 */
export function childSchema(schema: z.ZodType, segment: string): z.ZodType | undefined {
  const def = schemaDef(unwrap(schema));
  if (def.type === 'object') return def.shape ? def.shape[segment] : undefined;
  if (def.type === 'record') return def.valueType;
  if (def.type === 'array') return /^\d+$/.test(segment) ? def.element : undefined;
  return undefined;
}

/** How a raw environment string is coerced for this schema. */
export function leafKind(schema: z.ZodType): LeafKind {
  switch (kindOf(schema)) {
    case 'number':
    case 'int':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'string':
    case 'enum':
    case 'literal':
      return 'string';
    case 'array':
    case 'tuple':
      return 'list';
    case 'object':
    case 'record':
      return 'mapping';
    default:
      return 'other';
  }
}

/**
 * The kind a list element is written as in a comma-separated variable: its own, or for a union with
 * a scalar option (a token list of plain strings or objects) that option's.
 */
export function scalarKindOf(schema: z.ZodType): LeafKind {
  const def = schemaDef(unwrap(schema));
  if (def.type !== 'union' || !def.options) return leafKind(schema);
  const scalar = def.options.map(leafKind).find((k) => k === 'string' || k === 'number' || k === 'boolean');
  return scalar ?? 'other';
}

/** The element schema of a list schema. */
export function elementSchema(schema: z.ZodType): z.ZodType | undefined {
  const def = schemaDef(unwrap(schema));
  return def.type === 'array' ? def.element : undefined;
}

/** True when the top-level object schema has the given key. */
export function hasKey(schema: z.ZodType, key: string): boolean {
  return childSchema(schema, key) !== undefined && kindOf(schema) === 'object';
}
