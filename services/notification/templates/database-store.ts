/**
 * DatabaseTemplateStore: templates in the `templates` table (migration 20261127000100_templates),
 * on PostgreSQL or PGlite through knex. Writes take one advisory lock so the `max_templates` bound
 * holds across replicas (writes are rare; reads take no lock).
 */
import type { Knex } from 'knex';
import { toNumber, rows } from '../../../shared/storage/database';
import type { NotifyChannel } from '../notify/config';
import type { TemplateKey, TemplatePageQuery, TemplateStore } from './store';
import type { Template, TemplateContent } from './types';

interface TemplateRow {
  category: string;
  channel: NotifyChannel;
  locale: string;
  content: TemplateContent | string;
  updated_at: Date | string;
}

function fromRow(r: TemplateRow): Template {
  return {
    category: r.category,
    channel: r.channel,
    locale: r.locale,
    content: typeof r.content === 'string' ? (JSON.parse(r.content) as TemplateContent) : r.content,
    updatedAt: r.updated_at instanceof Date ? r.updated_at : new Date(r.updated_at),
  };
}

const COLUMNS = 'category, channel, locale, content, updated_at';
/** The advisory lock every write takes (a constant key: one writer at a time). */
const WRITE_LOCK = "SELECT pg_advisory_xact_lock(hashtext('notification.templates'))";

/** The knex-backed TemplateStore. Run the notification migrations first. */
export class DatabaseTemplateStore implements TemplateStore {
  readonly backend = 'database' as const;

  constructor(private readonly knex: Knex) {}

  async get(key: TemplateKey): Promise<Template | undefined> {
    const found = rows<TemplateRow>(
      await this.knex.raw(
        `SELECT ${COLUMNS} FROM templates WHERE category = ? AND channel = ? AND locale = ?`,
        [key.category, key.channel, key.locale],
      ),
    );
    return found[0] && fromRow(found[0]);
  }

  async findFirst(
    category: string,
    channel: NotifyChannel,
    locales: readonly string[],
  ): Promise<Template | undefined> {
    if (locales.length === 0) return undefined;
    const found = rows<TemplateRow>(
      await this.knex.raw(
        `SELECT ${COLUMNS} FROM templates WHERE category = ? AND channel = ? AND locale IN (${locales
          .map(() => '?')
          .join(', ')})`,
        [category, channel, ...locales],
      ),
    );
    const best = found.sort((a, b) => locales.indexOf(a.locale) - locales.indexOf(b.locale))[0];
    return best && fromRow(best);
  }

  async list(query: TemplatePageQuery): Promise<Template[]> {
    const where: string[] = [];
    const bindings: Knex.RawBinding[] = [];
    if (query.category !== undefined) {
      where.push('category = ?');
      bindings.push(query.category);
    }
    if (query.after) {
      where.push('(category, channel, locale) > (?, ?, ?)');
      bindings.push(query.after.category, query.after.channel, query.after.locale);
    }
    bindings.push(query.limit);
    return rows<TemplateRow>(
      await this.knex.raw(
        `SELECT ${COLUMNS} FROM templates ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
         ORDER BY category, channel, locale LIMIT ?`,
        bindings,
      ),
    ).map(fromRow);
  }

  private async write(trx: Knex.Transaction, t: Template): Promise<Template> {
    const [row] = rows<TemplateRow>(
      await trx.raw(
        `INSERT INTO templates (category, channel, locale, content, updated_at) VALUES (?, ?, ?, ?::jsonb, ?)
         ON CONFLICT (category, channel, locale)
         DO UPDATE SET content = EXCLUDED.content, updated_at = EXCLUDED.updated_at
         RETURNING ${COLUMNS}`,
        [t.category, t.channel, t.locale, JSON.stringify(t.content), t.updatedAt],
      ),
    );
    return fromRow(row!);
  }

  private async count(trx: Knex.Transaction): Promise<number> {
    return toNumber(rows<{ n: unknown }>(await trx.raw('SELECT count(*) AS n FROM templates'))[0]!.n);
  }

  async upsert(
    template: Template,
    maxTemplates: number,
  ): Promise<{ template: Template; created: boolean } | { full: true }> {
    return this.knex.transaction(async (trx) => {
      await trx.raw(WRITE_LOCK);
      const exists =
        rows(
          await trx.raw('SELECT 1 FROM templates WHERE category = ? AND channel = ? AND locale = ?', [
            template.category,
            template.channel,
            template.locale,
          ]),
        ).length > 0;
      if (!exists && (await this.count(trx)) >= maxTemplates) return { full: true as const };
      return { template: await this.write(trx, template), created: !exists };
    });
  }

  async upsertAll(
    templates: readonly Template[],
    maxTemplates: number,
  ): Promise<{ created: number } | { full: true }> {
    return this.knex
      .transaction(async (trx) => {
        await trx.raw(WRITE_LOCK);
        const before = await this.count(trx);
        for (const t of templates) await this.write(trx, t);
        const after = await this.count(trx);
        // Throwing rolls the writes back: all or nothing.
        if (after > maxTemplates && after > before) throw new TemplatesFullSignal();
        return { created: after - before };
      })
      .catch((err: unknown) => {
        if (err instanceof TemplatesFullSignal) return { full: true as const };
        throw err;
      });
  }

  async delete(key: TemplateKey): Promise<boolean> {
    const deleted = rows(
      await this.knex.raw(
        'DELETE FROM templates WHERE category = ? AND channel = ? AND locale = ? RETURNING 1',
        [key.category, key.channel, key.locale],
      ),
    );
    return deleted.length > 0;
  }
}

class TemplatesFullSignal extends Error {}
