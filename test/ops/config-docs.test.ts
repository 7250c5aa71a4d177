/**
 * deploy/configuration.md is generated from the config schemas (scripts/gen-config-docs.ts): these
 * tests keep the committed file in step and check that the generator sees every key.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { CONFIG_DOC_PATH, ROOT, configRows, generateConfigDocs } from '../../scripts/gen-config-docs';
import { NotificationConfigSchema } from '../../services/notification/config';
import { MonitorConfigSchema } from '../../services/monitor/config';

/** Every leaf key path of a parsed config object (lists of mappings through their first element). */
function leafKeys(value: unknown, prefix: string): string[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [prefix];
  return Object.entries(value).flatMap(([k, v]) => leafKeys(v, `${prefix}.${k}`));
}

describe('the configuration reference', () => {
  test('When a schema changes, the committed deploy/configuration.md no longer matches: run npm run docs:config', () => {
    const committed = readFileSync(join(ROOT, CONFIG_DOC_PATH), 'utf8');
    // One message that says what to do, rather than a 500-line diff.
    if (committed !== generateConfigDocs()) {
      throw new Error(`${CONFIG_DOC_PATH} is out of date: run \`npm run docs:config\` and commit the result`);
    }
  });

  test.each([
    ['notification', NotificationConfigSchema],
    ['monitor', MonitorConfigSchema],
  ] as const)('Every key of the %s defaults appears with its default and env var', (section, schema) => {
    const rows = configRows(section, schema);
    const keys = new Set(rows.map((r) => r.key));
    const defaults = (schema as z.ZodType).parse({ environment: 'development' }) as Record<string, unknown>;
    const missing = leafKeys(defaults, section).filter((k) => !keys.has(k));
    expect(missing).toEqual([]);
    for (const row of rows.filter((r) => !r.key.includes('[i]'))) {
      expect(row.envVar).toBe(`SVC_${row.key.replace(/\./g, '__').toUpperCase()}`);
    }
  });

  test('Defaults, types and doc comments come from the schema and its source', () => {
    const rows = new Map(configRows('notification', NotificationConfigSchema).map((r) => [r.key, r]));
    const retention = rows.get('notification.inbox.retention_days');
    expect(retention).toMatchObject({
      type: 'integer',
      default: '`30`',
      envVar: 'SVC_NOTIFICATION__INBOX__RETENTION_DAYS',
    });
    expect(retention?.description).toContain('purged');
    expect(rows.get('notification.server.grpc_port')?.default).toBe('`50051`');
    expect(rows.get('notification.log.format')?.type).toBe('"auto" | "json" | "pretty"');
    expect(rows.get('notification.health.timeout')?.type).toBe('duration');
    expect(rows.get('notification.admin.auth.jwt_secret')?.default).toBe('unset');
    expect(rows.get('notification.mailer.backends[i].smtp.host')).toMatchObject({
      default: 'required',
      envVar: 'SVC_NOTIFICATION__MAILER__BACKENDS__<i>__SMTP__HOST',
    });
    const monitor = new Map(configRows('monitor', MonitorConfigSchema).map((r) => [r.key, r]));
    expect(monitor.get('monitor.server.grpc_port')?.default).toBe('`50052`');
    // A key spread in from a shape function (`...sloConfigShape()`) keeps its own comment.
    expect(monitor.get('monitor.slo.objectives[i].metric')?.description).toContain('metric');
  });

  test('A key added to a schema shows up without touching the generator (walks the schema itself)', () => {
    const schema = z.strictObject({
      extra: z
        .strictObject({
          size: z.number().int().default(7).describe('How many.'),
          items: z.array(z.strictObject({ name: z.string() })).default(() => []),
        })
        .prefault({}),
    });
    const rows = configRows('monitor', schema, []);
    expect(rows.map((r) => [r.key, r.type, r.default, r.envVar, r.description])).toEqual([
      ['monitor.extra', 'mapping', '', 'SVC_MONITOR__EXTRA', ''],
      ['monitor.extra.size', 'integer', '`7`', 'SVC_MONITOR__EXTRA__SIZE', 'How many.'],
      ['monitor.extra.items', 'list of mappings', '`[]`', 'SVC_MONITOR__EXTRA__ITEMS', ''],
      ['monitor.extra.items[i].name', 'string', 'required', 'SVC_MONITOR__EXTRA__ITEMS__<i>__NAME', ''],
    ]);
  });
});
