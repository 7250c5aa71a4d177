/**
 * `npm run templates:sync -- <folder>`: validates every template file of the folder and writes them
 * into the configured database (the service's config loader, the same storage root and migrations
 * the service opens), printing what changed. A bad file fails the whole sync with its path, line and
 * column, and nothing is written (exit 1). Layout: templates/sync.ts and templates/README.md.
 */
import { ConfigError } from '../../shared/config';
import { DomainError } from '../../shared/errors';
import { createLogger } from '../../shared/logging/logger';
import { openStorage } from '../../shared/storage/database';
import { loadNotificationConfig } from './config';
import { NOTIFICATION_MIGRATION_SETS } from './app';
import { createTemplates } from './templates';
import { syncTemplates } from './templates/sync';

async function main(argv: readonly string[]): Promise<number> {
  const folder = argv[0];
  if (!folder || argv.length > 1) {
    process.stderr.write('usage: npm run templates:sync -- <folder>\n');
    return 2;
  }
  let config;
  try {
    config = loadNotificationConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`invalid configuration\n${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const logger = createLogger({ name: 'templates-sync', level: 'warn', format: config.log.format });
  const storage = await openStorage(config.database, NOTIFICATION_MIGRATION_SETS, logger);
  try {
    const templates = createTemplates({
      config: { ...config.templates, store_backend: 'database' },
      notify: config.notify,
      knex: storage.knex,
    });
    const report = await syncTemplates(folder, {
      ...templates,
      maxSourceBytes: config.templates.max_source_bytes,
      maxTemplates: config.templates.max_templates,
    });
    for (const [what, keys] of Object.entries(report)) {
      for (const key of keys as string[]) process.stdout.write(`${what.padEnd(9)} ${key}\n`);
    }
    process.stdout.write(
      `templates: ${report.created.length} created, ${report.updated.length} updated, ${report.unchanged.length} unchanged, ${report.kept.length} kept\n`,
    );
    return 0;
  } catch (err) {
    if (err instanceof DomainError) {
      process.stderr.write(`templates:sync failed, nothing written\n${err.message}\n`);
      return 1;
    }
    throw err;
  } finally {
    await storage.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`templates:sync failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
