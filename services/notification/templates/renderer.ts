/**
 * TemplateRendering: the TemplateRenderer `Notify` calls for every channel of every notification,
 * and the preview of RenderTemplate. Finds the template through the locale fallback (`es-MX` ->
 * `es` -> `notify.default_locale`) in one store read, lays Notify's override parts over it, renders
 * each part in the recipient's locale and time zone (strict: a missing variable is
 * InvalidArgumentError naming it), and completes an email: CSS inlined (engine), a text part
 * derived from the HTML when none is given (the email channel's one rule).
 */
import { InvalidArgumentError, NotFoundError } from '../../../shared/errors';
import { textFromHtml } from '../channels/email/mailable';
import type { NotifyConfig } from '../notify/config';
import { checkCategoryChannel, type TemplateCatalog } from './catalog';
import type { TemplateEngine } from './engine';
import type { RenderEnv } from './filters';
import { checkTimeZone, fallbackChain } from './locale';
import { missingPart, presentParts } from './rules';
import { type SmsSegments, smsSegments } from './sms-segments';
import type { TemplateStore } from './store';
import type { RenderInput, Rendered, RenderedContent, TemplateContent, TemplateRenderer } from './types';

/** What the renderer needs. */
export interface TemplateRenderingDeps {
  store: TemplateStore;
  engine: TemplateEngine;
  /** Validates override parts as upsert validates a template's. */
  catalog: TemplateCatalog;
  notify: Pick<NotifyConfig, 'categories' | 'default_locale'>;
}

/** A preview: the render and, for SMS, its segments. */
export interface Preview extends Rendered {
  smsSegments?: SmsSegments;
}

const TEXT_PARTS = ['title', 'body', 'subject', 'text'] as const;

/** The TemplateRenderer of the templates area. */
export class TemplateRendering implements TemplateRenderer {
  constructor(private readonly deps: TemplateRenderingDeps) {}

  async render(input: RenderInput): Promise<Rendered | undefined> {
    const channel = checkCategoryChannel(this.deps.notify, input.category, input.channel);
    const locales = fallbackChain(input.locale, this.deps.notify.default_locale);
    const env: RenderEnv = { locale: locales[0]!, timeZone: checkTimeZone(input.timeZone) };
    const override = input.override
      ? this.deps.catalog.validateContent(channel, input.override, 'override')
      : undefined;
    const template = await this.deps.store.findFirst(input.category, channel, locales);
    const content: TemplateContent = { ...presentParts(template?.content), ...override };
    if (!template && missingPart(channel, content) !== undefined) return undefined;
    // Formatting follows the recipient's locale even when the text falls back to another language.
    const scope: Record<string, unknown> = { data: input.data };
    if (input.user) scope.user = input.user;
    return {
      content: await this.renderContent(content, scope, env),
      locale: template?.locale ?? locales[0]!,
    };
  }

  private async renderContent(
    content: TemplateContent,
    scope: Record<string, unknown>,
    env: RenderEnv,
  ): Promise<RenderedContent> {
    const { engine } = this.deps;
    const out: RenderedContent = {};
    for (const part of TEXT_PARTS) {
      const source = content[part];
      if (source !== undefined) {
        out[part] = await engine.render(engine.parse(source, 'text', part), 'text', part, scope, env);
      }
    }
    if (content.html !== undefined) {
      out.html = await engine.render(engine.parse(content.html, 'html', 'html'), 'html', 'html', scope, env);
      if (out.text === undefined) out.text = textFromHtml(out.html);
    }
    if (content.data !== undefined) {
      out.data = (await this.renderData(content.data, 'data', scope, env)) as Record<string, unknown>;
    }
    return out;
  }

  private async renderData(
    value: unknown,
    path: string,
    scope: Record<string, unknown>,
    env: RenderEnv,
  ): Promise<unknown> {
    const { engine } = this.deps;
    if (typeof value === 'string')
      return engine.render(engine.parse(value, 'text', path), 'text', path, scope, env);
    if (Array.isArray(value)) {
      const out: unknown[] = [];
      for (const [i, v] of value.entries()) out.push(await this.renderData(v, `${path}[${i}]`, scope, env));
      return out;
    }
    if (value !== null && typeof value === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value))
        out[k] = await this.renderData(v, `${path}.${k}`, scope, env);
      return out;
    }
    return value;
  }

  /**
   * RenderTemplate: the render with sample data and, for SMS, its segments. NotFoundError when no
   * template of the category and channel exists in any locale of the fallback.
   */
  async preview(input: Omit<RenderInput, 'override' | 'user'>): Promise<Preview> {
    if (typeof input.data !== 'object' || input.data === null) {
      throw new InvalidArgumentError('data must be an object', 'data');
    }
    const rendered = await this.render(input);
    if (!rendered) {
      const chain = fallbackChain(input.locale, this.deps.notify.default_locale);
      throw new NotFoundError(
        `no template of category ${input.category}, channel ${input.channel} in ${chain.join(', ')}`,
      );
    }
    return input.channel === 'sms'
      ? { ...rendered, smsSegments: smsSegments(rendered.content.text ?? '') }
      : rendered;
  }
}
