/**
 * The templates table: one row per (category, channel, locale), its Liquid parts as jsonb. Plain
 * SQL that PostgreSQL 15 and PGlite (PostgreSQL 18) both accept. The key columns use the "C"
 * collation so the listing's order (and its page tokens) is code-unit order on every server.
 */
import type { Knex } from 'knex';

/** Creates the templates table. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE templates (
      category text COLLATE "C" NOT NULL,
      channel text COLLATE "C" NOT NULL,
      locale text COLLATE "C" NOT NULL,
      content jsonb NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (category, channel, locale)
    )`);
}

/** Drops the templates table. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS templates');
}
