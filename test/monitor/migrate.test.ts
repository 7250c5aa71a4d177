/**
 * `npm run migrate` applies the monitor's migrations too: its script runs the monitor's migrate
 * program (dist) after the notification service's, and that program migrates the configured database
 * and exits 0, then finds the schema up to date.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { createTestDatabase } from '../support/database';
import { MONITOR_MIGRATIONS_TABLE, monitorMigrations } from '../../services/monitor/migrations';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..');
const MIGRATE = join(ROOT, 'dist', 'services', 'monitor', 'migrate.js');

jest.setTimeout(120_000);

it("npm run migrate runs the monitor migrate program after the notification service's", () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  expect(pkg.scripts.migrate).toContain('node dist/services/notification/migrate.js');
  expect(pkg.scripts.migrate).toContain('node dist/services/monitor/migrate.js');
});

it('the monitor migrate program applies the monitor migrations to the configured PostgreSQL, then finds nothing to do', async () => {
  expect(existsSync(MIGRATE)).toBe(true);
  const db = await createTestDatabase('mon_migrate');
  try {
    const env = {
      PATH: process.env.PATH ?? '',
      SVC_MONITOR__DATABASE__URL: db.url,
      SVC_MONITOR__LOG__FORMAT: 'json',
    };
    const first = await run(process.execPath, [MIGRATE], { cwd: ROOT, env });
    expect(first.stdout).toContain('migrations applied');
    expect(first.stdout).not.toContain(new URL(db.url).password || '\u0000never');
    const c = new Client({ connectionString: db.url });
    await c.connect();
    try {
      const { rows } = await c.query<{ name: string }>(`SELECT name FROM ${MONITOR_MIGRATIONS_TABLE}`);
      expect(rows.map((r) => r.name)).toEqual(monitorMigrations.map((m) => m.name));
    } finally {
      await c.end();
    }
    const second = await run(process.execPath, [MIGRATE], { cwd: ROOT, env });
    expect(second.stdout).toContain('schema is up to date');
  } finally {
    await db.drop();
  }
});
