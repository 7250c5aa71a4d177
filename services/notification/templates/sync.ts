/**
 * `templates:sync`: loads a folder of template files into the catalog, so teams keep templates in
 * version control. Layout (one file per part):
 *
 *   <folder>/<category>/<channel>.<locale>.<part>.liquid     e.g. orders/email.es-MX.html.liquid
 *   <folder>/<category>/push.<locale>.data.json               push data: a JSON object of Liquid strings
 *
 * Every file is read and every template validated (category, channel, locale, parts, Liquid syntax)
 * before anything is written; a bad file fails the whole sync with its path, line and column, and
 * nothing is written. Then the changed templates are written in one transaction. Templates in the
 * store that the folder does not have are left alone (reported as `kept`).
 */
import { readFile, readdir, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { DomainError, InvalidArgumentError } from '../../../shared/errors';
import type { TemplateCatalog } from './catalog';
import type { TemplateEngine } from './engine';
import { missingPart, type PartName } from './rules';
import type { TemplateStore } from './store';
import type { Template, TemplateContent } from './types';

/** What a sync did, per template key (`category/channel/locale`). */
export interface SyncReport {
  created: string[];
  updated: string[];
  unchanged: string[];
  /** In the store, not in the folder: left as they are. */
  kept: string[];
}

/** A file the sync cannot take: its path (relative to the folder) and why. */
export class SyncFileError extends InvalidArgumentError {
  constructor(
    readonly path: string,
    reason: string,
  ) {
    super(`${path}: ${reason}`, path);
  }
}

const FILE = /^([a-z]+)\.([A-Za-z0-9-]+)\.(title|body|subject|html|text)\.liquid$/;
const DATA_FILE = /^(push)\.([A-Za-z0-9-]+)\.(data)\.json$/;

/** What the sync needs. */
export interface SyncDeps {
  catalog: TemplateCatalog;
  engine: TemplateEngine;
  store: TemplateStore;
  maxSourceBytes: number;
  maxTemplates: number;
}

function keyName(t: { category: string; channel: string; locale: string }): string {
  return `${t.category}/${t.channel}/${t.locale}`;
}

/** Reads, validates, then writes (all or nothing) the templates of `folder`. */
export async function syncTemplates(folder: string, deps: SyncDeps): Promise<SyncReport> {
  const groups = new Map<
    string,
    { category: string; channel: string; locale: string; files: Map<PartName, string> }
  >();
  const contents = new Map<string, TemplateContent>();
  let files = 0;
  const maxFiles = deps.maxTemplates * 6;
  for (const category of (await readdir(folder, { withFileTypes: true })).sort((a, b) =>
    a.name < b.name ? -1 : 1,
  )) {
    if (category.name.startsWith('.')) continue;
    if (!category.isDirectory()) throw new SyncFileError(category.name, 'expected a category folder');
    for (const entry of (await readdir(join(folder, category.name), { withFileTypes: true })).sort((a, b) =>
      a.name < b.name ? -1 : 1,
    )) {
      if (entry.name.startsWith('.')) continue;
      const path = relative(folder, join(folder, category.name, entry.name));
      const m = FILE.exec(entry.name) ?? DATA_FILE.exec(entry.name);
      if (!entry.isFile() || !m) {
        throw new SyncFileError(
          path,
          'expected <channel>.<locale>.<part>.liquid (or push.<locale>.data.json)',
        );
      }
      if (++files > maxFiles) throw new SyncFileError(path, `more than ${maxFiles} files`);
      const [, channel, locale, part] = m as unknown as [string, string, string, PartName];
      const full = join(folder, path);
      if ((await stat(full)).size > deps.maxSourceBytes) {
        throw new SyncFileError(
          path,
          `larger than ${deps.maxSourceBytes} bytes (templates.max_source_bytes)`,
        );
      }
      const source = await readFile(full, 'utf8');
      const groupKey = `${category.name}\u0000${channel}\u0000${locale}`;
      let group = groups.get(groupKey);
      if (!group) {
        group = { category: category.name, channel, locale, files: new Map() };
        groups.set(groupKey, group);
        contents.set(groupKey, {});
      }
      group.files.set(part, path);
      const content = contents.get(groupKey)!;
      if (part === 'data') {
        try {
          const data = JSON.parse(source) as unknown;
          if (typeof data !== 'object' || data === null || Array.isArray(data))
            throw new Error('not an object');
          content.data = data as Record<string, unknown>;
        } catch {
          throw new SyncFileError(path, 'is not a JSON object');
        }
      } else {
        // The Liquid of each file parsed here, so an error names the file, its line and column.
        try {
          deps.engine.parse(source, part === 'html' ? 'html' : 'text', part);
        } catch (err) {
          if (err instanceof DomainError) throw new SyncFileError(path, err.message.replace(/^[a-z]+: /, ''));
          throw err;
        }
        content[part] = source;
      }
    }
  }

  // Every template validated as an upsert would be (category, channel, locale, parts).
  const templates: Template[] = [];
  for (const [groupKey, group] of groups) {
    const firstFile = [...group.files.values()][0]!;
    let template: Template;
    try {
      template = deps.catalog.validate({ ...group, content: contents.get(groupKey)! });
      const missing = missingPart(template.channel, template.content);
      if (missing) throw new InvalidArgumentError(missing, 'content');
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      const part = /^content\.([a-z]+)/.exec((err as InvalidArgumentError).field ?? '')?.[1] as
        PartName | undefined;
      throw new SyncFileError((part && group.files.get(part)) ?? firstFile, err.message);
    }
    if (templates.some((t) => keyName(t) === keyName(template))) {
      throw new SyncFileError(
        firstFile,
        `a second template of ${keyName(template)} (locales are canonicalised)`,
      );
    }
    templates.push(template);
  }

  const report: SyncReport = { created: [], updated: [], unchanged: [], kept: [] };
  const changed: Template[] = [];
  for (const t of templates) {
    const existing = await deps.store.get(t);
    if (!existing) report.created.push(keyName(t));
    else if (JSON.stringify(sorted(existing.content)) === JSON.stringify(sorted(t.content))) {
      report.unchanged.push(keyName(t));
      continue;
    } else report.updated.push(keyName(t));
    changed.push(t);
  }
  if (changed.length) await deps.catalog.upsertAll(changed);
  const inFolder = new Set(templates.map(keyName));
  let after: Template | undefined;
  for (;;) {
    const page = await deps.store.list({ limit: 500, after });
    for (const t of page) if (!inFolder.has(keyName(t))) report.kept.push(keyName(t));
    if (page.length < 500) break;
    after = page[page.length - 1];
  }
  return report;
}

/** Object keys in order, so two equal contents compare equal as JSON (jsonb reorders keys). */
function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => [k, sorted(v)]),
    );
  }
  return value;
}
