/**
 * The secret config keys of both services, derived from their zod schemas: every key the project's
 * own redactor (shared/config/redact.ts) treats as a secret, wherever it sits (nested objects, list
 * elements, the variants of a union such as the monitor's alert channels). The secrets suite
 * configures each of them with a unique value and checks that it covers them all, so a secret key
 * added to any schema fails the suite until the suite sets it and scans for it.
 */
import type { z } from 'zod';

import { isSecretKey, isSecretMapKey } from '../../../shared/config/redact';
import { schemaDef, unwrap } from '../../../shared/config/schema-walk';
import { MonitorConfigSchema } from '../../../services/monitor/config';
import { NotificationConfigSchema } from '../../../services/notification/config';

// Objects whose `url` is a credential: a database URL carries its password; a webhook's URL often
// carries its token in the path (the redactor keeps only its origin).
const SECRET_URL_PARENTS = new Set(['database', 'webhook']);

/** True when the key `name` (below `parent`) holds a secret, by the redactor's own rules. */
export function isSecretConfigKey(name: string, parent: string | undefined): boolean {
  return (
    isSecretKey(name) || isSecretMapKey(name) || (name === 'url' && SECRET_URL_PARENTS.has(parent ?? ''))
  );
}

/** The shapes `schema` may take once wrappers are peeled: one, or each variant of a union. */
function variants(schema: z.ZodType): z.ZodType[] {
  const core = unwrap(schema);
  const def = schemaDef(core);
  return def.type === 'union' && def.options ? def.options.flatMap(variants) : [core];
}

/**
 * Every secret key below `schema`, as `section.a.b[i].c` (a list element is `[i]`, a mapping's
 * value `{key}`), sorted and without duplicates. The walk stops at a secret: its inside is secret too.
 */
export function secretKeysOf(section: string, schema: z.ZodType): string[] {
  const found = new Set<string>();
  const walk = (node: z.ZodType, path: string, parent: string | undefined): void => {
    for (const shape of variants(node)) {
      const def = schemaDef(shape);
      if (def.type === 'object' && def.shape) {
        for (const [name, child] of Object.entries(def.shape)) {
          const at = `${path}.${name}`;
          if (isSecretConfigKey(name, parent)) found.add(at);
          else walk(child, at, name);
        }
      } else if (def.type === 'array' && def.element) {
        walk(def.element, `${path}[i]`, parent);
      } else if (def.type === 'record' && def.valueType) {
        walk(def.valueType, `${path}{key}`, parent);
      }
    }
  };
  walk(schema, section, section);
  return [...found].sort();
}

/** Every secret key of both services. */
export function allSecretKeys(): string[] {
  return [
    ...secretKeysOf('notification', NotificationConfigSchema),
    ...secretKeysOf('monitor', MonitorConfigSchema),
  ];
}
