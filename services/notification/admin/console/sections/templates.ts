/**
 * The console's templates section (issue 29): list the templates by name (the category, or
 * `<category>.digest`), read every variant of one, edit one variant (channel, locale) with the
 * validation of UpsertTemplate, and preview unsaved source with sample data through the renderer
 * RenderTemplate uses, with the SMS segment count.
 *
 * Routes (under /admin/console/api/):
 * - `GET templates`: `{items: [{name, channels, locales, variants, updated_at}], next_cursor: null}`,
 *   every configured name (and every stored one), whole (the catalog holds at most
 *   `templates.max_templates`).
 * - `GET templates/:name`: `{name, channels, parts, variants: [{channel, locale, content, updated_at}]}`;
 *   404 for a name neither configured nor stored.
 * - `PUT templates/:name` `{channel, locale, content}`: creates or replaces one variant.
 * - `POST templates/preview` `{name, channel, locale, template, data, time_zone?}`: `template` is the
 *   unsaved parts, laid over the stored variant as Notify's override is (so an unsaved part the editor
 *   left out comes from the stored one).
 *
 * A syntax error (or a render error that knows its place) is 400 with the shared error body plus
 * `field`, `line` and `column`: `{error: {code, message, field, line, column}}`.
 */
import type { ServerResponse } from 'node:http';
import { InvalidArgumentError } from '../../../../../shared/errors';
import { NOTIFY_CHANNELS, type NotifyChannel } from '../../../notify/config';
import { DIGEST_TEMPLATE_SUFFIX } from '../../../templates/catalog';
import { CHANNEL_PARTS } from '../../../templates/rules';
import { smsSegments } from '../../../templates/sms-segments';
import type { Template, TemplateContent } from '../../../templates/types';
import { sendJson } from '../../http';
import { type ConsoleSection, jsonObject } from '../console-gateway';
import type { ConsoleSectionDeps } from './index';

/**
 * Largest body of PUT and preview: room for the three parts of an email at the default
 * `templates.max_source_bytes` (64 KiB each) as JSON, plus sample data. Each part's own bound is the
 * templates area's.
 */
export const TEMPLATE_BODY_BYTES = 256 * 1024;
const PARTS = ['subject', 'title', 'body', 'html', 'text'] as const;

interface VariantJson {
  channel: NotifyChannel;
  locale: string;
  content: TemplateContent;
  updated_at: string;
}

function variantJson(t: Template): VariantJson {
  return { channel: t.channel, locale: t.locale, content: t.content, updated_at: t.updatedAt.toISOString() };
}

/** The parts of a body's `content` / `template`: strings for the text parts, an object for push data. */
function contentOf(value: unknown, field: string): TemplateContent {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidArgumentError(`${field} must be an object of parts`, field);
  }
  const raw = value as Record<string, unknown>;
  const out: TemplateContent = {};
  for (const [key, v] of Object.entries(raw)) {
    if (v === undefined || v === null || v === '') continue;
    if ((PARTS as readonly string[]).includes(key)) {
      if (typeof v !== 'string')
        throw new InvalidArgumentError(`${field}.${key} must be a string`, `${field}.${key}`);
      out[key as (typeof PARTS)[number]] = v;
    } else if (key === 'data') {
      if (typeof v !== 'object' || Array.isArray(v)) {
        throw new InvalidArgumentError(`${field}.data must be an object`, `${field}.data`);
      }
      out.data = v as Record<string, unknown>;
    } else {
      throw new InvalidArgumentError(
        `${field}.${key.slice(0, 32)} is not a template part`,
        `${field}.${key}`,
      );
    }
  }
  return out;
}

function stringField(input: Record<string, unknown>, name: string, required = true): string {
  const v = input[name];
  if (v === undefined || v === null) {
    if (required) throw new InvalidArgumentError(`${name} is required`, name);
    return '';
  }
  if (typeof v !== 'string') throw new InvalidArgumentError(`${name} must be a string`, name);
  return v;
}

const POSITION = /\(?(?:[^(]*, )?line (\d+), column (\d+)\)?/;

/** Where a template error points, read from the templates area's message (`... (line L, column C)`). */
export function errorPosition(message: string): { line: number; column: number } | undefined {
  const m = POSITION.exec(message);
  return m ? { line: Number(m[1]), column: Number(m[2]) } : undefined;
}

/** Answers an INVALID_ARGUMENT with its field and position; false for any other error (rethrown). */
function sendTemplateError(res: ServerResponse, err: unknown): boolean {
  if (!(err instanceof InvalidArgumentError)) return false;
  const pos = errorPosition(err.message);
  sendJson(res, 400, {
    error: {
      code: 'invalid_argument',
      message: err.message,
      ...(err.field ? { field: err.field } : {}),
      ...(pos ?? {}),
    },
  });
  return true;
}

/** The templates section. */
export function templatesSection(deps: ConsoleSectionDeps): ConsoleSection {
  const { catalog, renderer } = deps.templates;
  const log = deps.logger.child({ component: 'console-templates' });

  /** Every configured name and the channels it may have. */
  function configuredNames(): Map<string, NotifyChannel[]> {
    const names = new Map<string, NotifyChannel[]>();
    for (const c of deps.categories) {
      names.set(c.name, [...c.channels]);
      const digested = Object.keys(c.digest ?? {}) as NotifyChannel[];
      if (digested.length) names.set(`${c.name}${DIGEST_TEMPLATE_SUFFIX}`, digested);
    }
    return names;
  }

  /** Every stored template (the catalog bounds how many). */
  async function allTemplates(category?: string): Promise<Template[]> {
    const out: Template[] = [];
    let pageToken = '';
    do {
      const page = await catalog.list({ category, pageToken, pageSize: 1000 });
      out.push(...page.templates);
      pageToken = page.nextPageToken;
    } while (pageToken);
    return out;
  }

  function channelOf(value: unknown, name: string, allowed: NotifyChannel[] | undefined): NotifyChannel {
    if (typeof value !== 'string' || !(NOTIFY_CHANNELS as readonly string[]).includes(value)) {
      throw new InvalidArgumentError(`channel must be one of ${NOTIFY_CHANNELS.join(', ')}`, 'channel');
    }
    if (allowed && !allowed.includes(value as NotifyChannel)) {
      throw new InvalidArgumentError(
        `the template ${name} has no ${value} channel (it has ${allowed.join(', ')})`,
        'channel',
      );
    }
    return value as NotifyChannel;
  }

  return {
    name: 'templates',
    routes: (api) => [
      api.route(['GET'], 'templates', async ({ res }) => {
        const names = configuredNames();
        const byName = new Map<string, Template[]>();
        for (const t of await allTemplates()) {
          const list = byName.get(t.category) ?? [];
          list.push(t);
          byName.set(t.category, list);
        }
        const all = [...new Set([...names.keys(), ...byName.keys()])].sort();
        const items = all.map((name) => {
          const ts = byName.get(name) ?? [];
          const latest = ts.reduce<Date | null>(
            (a, t) => (a === null || t.updatedAt > a ? t.updatedAt : a),
            null,
          );
          return {
            name,
            channels: names.get(name) ?? [...new Set(ts.map((t) => t.channel))],
            locales: [...new Set(ts.map((t) => t.locale))].sort(),
            variants: ts.length,
            updated_at: latest?.toISOString() ?? null,
          };
        });
        sendJson(res, 200, { items, next_cursor: null });
      }),
      api.route(['GET'], 'templates/:name', async ({ res, params }) => {
        const name = params.name!;
        const channels = configuredNames().get(name);
        // The catalog filters by a configured category; a digest's or an unconfigured name is filtered here.
        const byCategory = channels !== undefined && !name.endsWith(DIGEST_TEMPLATE_SUFFIX);
        const variants = (await allTemplates(byCategory ? name : undefined)).filter(
          (t) => t.category === name,
        );
        if (!channels && variants.length === 0) {
          sendJson(res, 404, { error: { code: 'not_found', message: 'no template of that name' } });
          return;
        }
        const has = channels ?? [...new Set(variants.map((t) => t.channel))];
        sendJson(res, 200, {
          name,
          channels: has,
          parts: Object.fromEntries(has.map((c) => [c, CHANNEL_PARTS[c]])),
          variants: variants.map(variantJson),
        });
      }),
      api.route(
        ['PUT'],
        'templates/:name',
        async ({ res, params, body, operator }) => {
          const name = params.name!;
          const input = jsonObject(body);
          try {
            const channel = channelOf(input.channel, name, configuredNames().get(name));
            const { template, created } = await catalog.upsert({
              category: name,
              channel,
              locale: stringField(input, 'locale'),
              content: contentOf(input.content, 'content'),
            });
            log.info(
              { name, channel, locale: template.locale, operator: operator.userId, created },
              'template saved from the console',
            );
            sendJson(res, created ? 201 : 200, { variant: variantJson(template), created });
          } catch (err) {
            if (!sendTemplateError(res, err)) throw err;
          }
        },
        { body: TEMPLATE_BODY_BYTES },
      ),
      api.route(
        ['POST'],
        'templates/preview',
        async ({ res, body }) => {
          const input = jsonObject(body);
          try {
            const name = stringField(input, 'name');
            const channel = channelOf(input.channel, name, undefined);
            const data = input.data ?? {};
            if (typeof data !== 'object' || data === null || Array.isArray(data)) {
              throw new InvalidArgumentError('data must be a JSON object', 'data');
            }
            const rendered = await renderer.render({
              category: name,
              channel,
              locale: stringField(input, 'locale', false),
              timeZone: stringField(input, 'time_zone', false),
              data: data as Record<string, unknown>,
              // Checked here first so that an error names the editor's field (`template.text`).
              override: catalog.validateContent(channel, contentOf(input.template, 'template'), 'template'),
            });
            if (!rendered) {
              throw new InvalidArgumentError(
                `the template lacks a part the ${channel} channel needs (it has ${CHANNEL_PARTS[channel].join(', ')})`,
                'template',
              );
            }
            const sms = channel === 'sms' ? smsSegments(rendered.content.text ?? '') : undefined;
            sendJson(res, 200, {
              content: rendered.content,
              locale: rendered.locale,
              sms: sms ? { encoding: sms.encoding, segments: sms.segments, units: sms.units } : null,
            });
          } catch (err) {
            if (!sendTemplateError(res, err)) throw err;
          }
        },
        { body: TEMPLATE_BODY_BYTES },
      ),
    ],
  };
}
