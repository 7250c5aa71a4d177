/** The catalog TemplateService manages: validation, bounds, pages. */
import { createTemplates, DEFAULT_TEMPLATES_CONFIG } from '../../../services/notification/templates';
import { buildTemplates, errorOf, NOTIFY } from './support';

describe('TemplateCatalog validation', () => {
  test('A part the channel does not have is INVALID_ARGUMENT naming it', async () => {
    const { catalog } = buildTemplates();
    const err = await errorOf(() =>
      catalog.upsert({
        category: 'orders',
        channel: 'sms',
        locale: 'en',
        content: { text: 'x', subject: 's' },
      }),
    );
    expect(err).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'content.subject' });
    expect(err.message).toContain('the sms channel has no subject');
  });

  test('A channel the category does not use, an unknown category, a missing required part: INVALID_ARGUMENT', async () => {
    const { catalog } = buildTemplates();
    const push = await errorOf(() =>
      catalog.upsert({ category: 'security', channel: 'push', locale: 'en', content: { title: 'x' } }),
    );
    expect(push).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'channel' });
    const unknown = await errorOf(() =>
      catalog.upsert({ category: 'nope', channel: 'sms', locale: 'en', content: { text: 'x' } }),
    );
    expect(unknown.message).toContain('the configured categories are orders, security');
    const subjectless = await errorOf(() =>
      catalog.upsert({ category: 'orders', channel: 'email', locale: 'en', content: { html: '<p>x</p>' } }),
    );
    expect(subjectless.message).toContain('an email template needs a subject');
  });

  test('NUL is refused; a CJK/RTL/emoji template is stored whole', async () => {
    const { catalog } = buildTemplates();
    const err = await errorOf(() =>
      catalog.upsert({ category: 'orders', channel: 'sms', locale: 'en', content: { text: 'a\u0000b' } }),
    );
    expect(err.message).toContain('NUL');
    const { template, created } = await catalog.upsert({
      category: 'orders',
      channel: 'inbox',
      locale: 'ar',
      content: { title: 'طلبك {{ data.id }} 📦', body: '注文 {{ data.id }}' },
    });
    expect(created).toBe(true);
    expect(template.content).toEqual({ title: 'طلبك {{ data.id }} 📦', body: '注文 {{ data.id }}' });
  });

  test('Push data nests at most 8 levels and is bounded by max_source_bytes as JSON', async () => {
    const { catalog } = buildTemplates({ max_source_bytes: 200 });
    const nest = (levels: number): Record<string, unknown> =>
      levels === 0 ? { v: '{{ data.x }}' } : { k: nest(levels - 1) };
    await catalog.upsert({
      category: 'orders',
      channel: 'push',
      locale: 'en',
      content: { title: 't', data: nest(7) },
    });
    const deep = await errorOf(() =>
      catalog.upsert({
        category: 'orders',
        channel: 'push',
        locale: 'en',
        content: { title: 't', data: nest(8) },
      }),
    );
    expect(deep.message).toContain('nests deeper than 8');
    const big = await errorOf(() =>
      catalog.upsert({
        category: 'orders',
        channel: 'push',
        locale: 'en',
        content: { title: 't', data: { a: 'é'.repeat(100) } },
      }),
    );
    expect(big).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'content.data' });
  });

  test('Push data with a NUL key or a lone surrogate anywhere is INVALID_ARGUMENT (jsonb refuses both)', async () => {
    const { catalog } = buildTemplates();
    for (const data of [
      { 'k\u0000': 'v' },
      { k: 'a\ud800' },
      { '\udc00': 'v' },
      { k: { deep: ['\ud83d'] } },
    ]) {
      const err = await errorOf(() =>
        catalog.upsert({ category: 'orders', channel: 'push', locale: 'en', content: { title: 't', data } }),
      );
      expect(err).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'content.data' });
      expect(err.message).toContain('NUL characters or broken text');
    }
    // A whole emoji is text.
    const { created } = await catalog.upsert({
      category: 'orders',
      channel: 'push',
      locale: 'en',
      content: { title: 't', data: { '😀': '📦 {{ data.id }}' } },
    });
    expect(created).toBe(true);
  });

  test('At max_templates a new template is RESOURCE_EXHAUSTED; get/delete of an absent one NOT_FOUND', async () => {
    const { catalog } = buildTemplates({ max_templates: 2 });
    await catalog.upsert({ category: 'orders', channel: 'sms', locale: 'en', content: { text: 'x' } });
    await catalog.upsert({ category: 'orders', channel: 'sms', locale: 'es', content: { text: 'x' } });
    const err = await errorOf(() =>
      catalog.upsert({ category: 'orders', channel: 'sms', locale: 'de', content: { text: 'x' } }),
    );
    expect(err.code).toBe('RESOURCE_EXHAUSTED');
    expect((await errorOf(() => catalog.get('orders', 'sms', 'de'))).code).toBe('NOT_FOUND');
    expect((await errorOf(() => catalog.delete('orders', 'sms', 'de'))).code).toBe('NOT_FOUND');
    await catalog.delete('orders', 'sms', 'es');
    await catalog.upsert({ category: 'orders', channel: 'sms', locale: 'de', content: { text: 'x' } });
  });
});

describe('TemplateCatalog pages', () => {
  async function filled() {
    const t = buildTemplates({ max_page_size: 3 });
    for (const locale of ['en', 'es', 'de', 'fr', 'ja']) {
      await t.catalog.upsert({ category: 'orders', channel: 'sms', locale, content: { text: locale } });
    }
    await t.catalog.upsert({ category: 'security', channel: 'sms', locale: 'en', content: { text: 's' } });
    return t;
  }

  test('Pages walk every template once, in order; a size above the max is capped', async () => {
    const { catalog } = await filled();
    const seen: string[] = [];
    let token = '';
    do {
      const page = await catalog.list({ pageSize: 100, pageToken: token });
      expect(page.templates.length).toBeLessThanOrEqual(3);
      seen.push(...page.templates.map((t) => `${t.category}/${t.locale}`));
      token = page.nextPageToken;
    } while (token);
    expect(seen).toEqual(['orders/de', 'orders/en', 'orders/es', 'orders/fr', 'orders/ja', 'security/en']);
  });

  test('A category filter lists only it; its token is refused under another filter', async () => {
    const { catalog } = await filled();
    const first = await catalog.list({ category: 'orders', pageSize: 2 });
    expect(first.templates.map((t) => t.locale)).toEqual(['de', 'en']);
    const err = await errorOf(() => catalog.list({ pageToken: first.nextPageToken }));
    expect(err).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'page_token' });
    expect((await errorOf(() => catalog.list({ pageSize: -1 }))).field).toBe('page_size');
    expect((await errorOf(() => catalog.list({ pageToken: 'garbage' }))).code).toBe('INVALID_ARGUMENT');
  });
});

describe('createTemplates', () => {
  test('A notify.default_locale that is not a BCP 47 tag stops the area at construction', () => {
    expect(() =>
      createTemplates({
        config: { ...DEFAULT_TEMPLATES_CONFIG, store_backend: 'memory' },
        notify: { ...NOTIFY, default_locale: 'not a locale' },
      }),
    ).toThrow('notify.default_locale is not a BCP 47 language tag');
  });
});
