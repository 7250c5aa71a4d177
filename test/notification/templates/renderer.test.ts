/**
 * The renderer Notify calls and RenderTemplate previews with: strict Liquid, the locale fallback,
 * the locale filters, email completion and the bounds. Memory store (the store contract runs on
 * every backend elsewhere).
 */
import { buildTemplates, errorOf } from './support';
import { cssInlineWork, MAX_CSS_INLINE_WORK } from '../../../services/notification/templates/engine';

async function setup(overrides = {}) {
  const t = buildTemplates(overrides);
  return t;
}

describe('strict rendering', () => {
  test('When the data lacks a variable, render throws INVALID_ARGUMENT naming it, never a blank', async () => {
    const { catalog, renderer } = await setup();
    await catalog.upsert({
      category: 'orders',
      channel: 'sms',
      locale: 'en',
      content: { text: 'Order {{ data.order.id }} shipped' },
    });
    const err = await errorOf(() =>
      renderer.render({
        category: 'orders',
        channel: 'sms',
        locale: 'en',
        timeZone: '',
        data: { order: {} },
      }),
    );
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toContain('data.order.id');
    expect(err.message).toContain('line 1, column 10');
  });

  test('When a whole object is missing, the error names the written variable and the missing part', async () => {
    const { catalog, renderer } = await setup();
    await catalog.upsert({
      category: 'orders',
      channel: 'sms',
      locale: 'en',
      content: { text: '{{ data.order.id }}' },
    });
    const err = await errorOf(() =>
      renderer.render({ category: 'orders', channel: 'sms', locale: 'en', timeZone: '', data: {} }),
    );
    expect(err.message).toBe(
      'the data lacks the variable data.order.id (data.order is missing; used in text, line 1, column 4)',
    );
  });

  test('A variable the data has renders; {% if %} may test one it lacks', async () => {
    const { catalog, renderer } = await setup();
    await catalog.upsert({
      category: 'orders',
      channel: 'sms',
      locale: 'en',
      content: { text: 'Order {{ data.order.id }}{% if data.note %} ({{ data.note }}){% endif %}' },
    });
    const r = await renderer.render({
      category: 'orders',
      channel: 'sms',
      locale: 'en',
      timeZone: '',
      data: { order: { id: 'A-1' } },
    });
    expect(r).toEqual({ content: { text: 'Order A-1' }, locale: 'en' });
  });

  test('An unknown filter is refused at upsert with its line and column', async () => {
    const { catalog } = await setup();
    const err = await errorOf(() =>
      catalog.upsert({
        category: 'orders',
        channel: 'sms',
        locale: 'en',
        content: { text: 'Hi\n{{ data.name | shout }}' },
      }),
    );
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toMatch(/content\.text: undefined filter: shout \(line 2, column \d+\)/);
    expect(err.field).toBe('content.text');
  });

  test('A syntax error is refused at upsert naming the part, line and column', async () => {
    const { catalog } = await setup();
    const err = await errorOf(() =>
      catalog.upsert({
        category: 'orders',
        channel: 'email',
        locale: 'en',
        content: { subject: 'Hi', html: '<p>\n  {% if data.x %}open' },
      }),
    );
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.field).toBe('content.html');
    expect(err.message).toContain('line 2, column 3');
  });

  test.each(['include', 'render', 'layout'])(
    'The %s tag is refused: templates never read files',
    async (tag) => {
      const { catalog } = await setup();
      const err = await errorOf(() =>
        catalog.upsert({
          category: 'orders',
          channel: 'sms',
          locale: 'en',
          content: { text: `{% ${tag} "/etc/passwd" %}` },
        }),
      );
      expect(err.code).toBe('INVALID_ARGUMENT');
      expect(err.message).toContain(`the ${tag} tag is not available`);
      expect(err.message).not.toContain('ENOENT');
    },
  );

  test('Only the data’s own properties are read: constructor and prototypes are missing variables', async () => {
    const { catalog, renderer } = await setup();
    await catalog.upsert({
      category: 'orders',
      channel: 'sms',
      locale: 'en',
      content: { text: '{{ data.constructor }}' },
    });
    const err = await errorOf(() =>
      renderer.render({ category: 'orders', channel: 'sms', locale: 'en', timeZone: '', data: {} }),
    );
    expect(err.message).toContain('data.constructor');
  });
});

describe('locale fallback', () => {
  async function withLocales(locales: string[]) {
    const t = await setup();
    for (const locale of locales) {
      await t.catalog.upsert({
        category: 'orders',
        channel: 'sms',
        locale,
        content: { text: `[${locale}]` },
      });
    }
    return t;
  }
  const render = (t: Awaited<ReturnType<typeof setup>>, locale: string) =>
    t.renderer.render({ category: 'orders', channel: 'sms', locale, timeZone: '', data: {} });

  test('es-MX uses es-MX, then es, then the default locale', async () => {
    const t = await withLocales(['es-MX', 'es', 'en']);
    expect(await render(t, 'es-MX')).toEqual({ content: { text: '[es-MX]' }, locale: 'es-MX' });
    expect(await render(t, 'es-AR')).toEqual({ content: { text: '[es]' }, locale: 'es' });
    expect(await render(t, 'fr-FR')).toEqual({ content: { text: '[en]' }, locale: 'en' });
    expect(await render(t, '')).toEqual({ content: { text: '[en]' }, locale: 'en' });
  });

  test('Locales are canonicalised: es-mx finds es-MX', async () => {
    const t = await withLocales(['es-mx']);
    expect((await t.catalog.get('orders', 'sms', 'ES-MX')).locale).toBe('es-MX');
    expect(await render(t, 'es-mx')).toMatchObject({ locale: 'es-MX' });
  });

  test('No template in any locale of the chain: render resolves undefined, preview is NOT_FOUND', async () => {
    const t = await withLocales(['de']);
    expect(await render(t, 'es-MX')).toBeUndefined();
    const err = await errorOf(() =>
      t.renderer.preview({ category: 'orders', channel: 'sms', locale: 'es-MX', timeZone: '', data: {} }),
    );
    expect(err.code).toBe('NOT_FOUND');
    expect(err.message).toContain('es-MX, es, en');
  });

  test('A malformed locale or zone is INVALID_ARGUMENT', async () => {
    const t = await withLocales(['en']);
    expect((await errorOf(() => render(t, 'not a locale!'))).code).toBe('INVALID_ARGUMENT');
    const zone = await errorOf(() =>
      t.renderer.render({
        category: 'orders',
        channel: 'sms',
        locale: 'en',
        timeZone: 'Mars/Base',
        data: {},
      }),
    );
    expect(zone).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'time_zone' });
  });

  test('An unknown category is INVALID_ARGUMENT listing the configured ones', async () => {
    const t = await withLocales(['en']);
    const err = await errorOf(() =>
      t.renderer.render({ category: 'promo', channel: 'sms', locale: 'en', timeZone: '', data: {} }),
    );
    expect(err).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'category' });
    expect(err.message).toContain('orders, security');
  });
});

describe('locale filters', () => {
  async function renderText(text: string, locale: string, data: Record<string, unknown>, timeZone = '') {
    const t = await setup();
    await t.catalog.upsert({ category: 'orders', channel: 'sms', locale: 'en', content: { text } });
    const r = await t.renderer.render({ category: 'orders', channel: 'sms', locale, timeZone, data });
    return r!.content.text;
  }

  test('number and currency follow the recipient locale', async () => {
    expect(await renderText('{{ data.n | number }}', 'de-DE', { n: 1234567.891 })).toBe('1.234.567,891');
    expect(await renderText('{{ data.n | number: 2 }}', 'en', { n: 3 })).toBe('3.00');
    expect(await renderText('{{ data.n | currency: "EUR" }}', 'es-ES', { n: 1234.5 })).toBe('1234,50\u00a0€');
    expect(await renderText('{{ data.n | currency: "JPY" }}', 'ja', { n: 1234 })).toBe('￥1,234');
    expect(await renderText('{{ data.n | number }}', 'ar-EG', { n: 12 })).toBe('١٢');
  });

  test('date formats in the recipient time zone', async () => {
    const at = '2026-03-01T23:30:00Z';
    expect(await renderText('{{ data.at | date: "long" }}', 'en-US', { at }, 'America/New_York')).toBe(
      'March 1, 2026',
    );
    expect(await renderText('{{ data.at | date: "long" }}', 'en-US', { at }, 'Europe/Madrid')).toBe(
      'March 2, 2026',
    );
    expect(await renderText('{{ data.at | date: "short", "short" }}', 'es-ES', { at }, 'Europe/Madrid')).toBe(
      '2/3/26, 0:30',
    );
    expect(await renderText('{{ data.at | date: "full" }}', 'ja', { at }, 'Asia/Tokyo')).toBe(
      '2026年3月2日月曜日',
    );
  });

  test('date with a strftime format (standard Liquid) formats in the recipient time zone', async () => {
    const at = '2026-03-01T23:30:00Z';
    expect(await renderText('{{ data.at | date: "%Y-%m-%d %H:%M" }}', 'ja', { at }, 'Asia/Tokyo')).toBe(
      '2026-03-02 08:30',
    );
    expect(await renderText('{{ data.at | date: "%Y-%m-%d %H:%M" }}', 'en', { at: Date.parse(at) })).toBe(
      '2026-03-01 23:30',
    );
    const err = await errorOf(() => renderText('{{ data.at | date: "longest" }}', 'en', { at }));
    expect(err.message).toContain('short, medium, long or full');
  });

  test('A value a filter cannot format is INVALID_ARGUMENT with the position', async () => {
    const err = await errorOf(() => renderText('x {{ data.at | date: "long" }}', 'en', { at: 'yesterday' }));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toContain('the date filter needs an ISO 8601 date');
    expect(err.message).toContain('line 1');
  });

  const PLURAL =
    '{{ data.count | plural: "zero: # zero", "one: # one", "two: # two", "few: # few", "many: # many", "other: # other" }}';

  test('plural: English has one and other', async () => {
    expect(await renderText(PLURAL, 'en', { count: 1 })).toBe('1 one');
    expect(await renderText(PLURAL, 'en', { count: 2 })).toBe('2 other');
    expect(await renderText(PLURAL, 'en', { count: 0 })).toBe('0 other');
  });

  test('plural: Spanish has one, many (millions) and other', async () => {
    expect(await renderText(PLURAL, 'es', { count: 1 })).toBe('1 one');
    expect(await renderText(PLURAL, 'es', { count: 5 })).toBe('5 other');
    expect(await renderText(PLURAL, 'es', { count: 1000000 })).toBe('1.000.000 many');
  });

  test('plural: Arabic has all six forms', async () => {
    const forms = await Promise.all(
      [0, 1, 2, 3, 11, 100].map((count) => renderText(PLURAL, 'ar', { count })),
    );
    // `ar` writes Latin digits in current CLDR; its six plural forms are what this shows.
    expect(forms).toEqual(['0 zero', '1 one', '2 two', '3 few', '11 many', '100 other']);
  });

  test('plural: Japanese has only other', async () => {
    expect(await renderText(PLURAL, 'ja', { count: 1 })).toBe('1 other');
    expect(await renderText(PLURAL, 'ja', { count: 7 })).toBe('7 other');
  });

  test('plural: an exact =N form wins, a missing form falls to other, no other is an error', async () => {
    const exact = '{{ data.count | plural: "=0: no messages", "one: # message", "other: # messages" }}';
    expect(await renderText(exact, 'en', { count: 0 })).toBe('no messages');
    expect(await renderText('{{ data.count | plural: "other: # x" }}', 'ar-EG', { count: 2 })).toBe('٢ x');
    const err = await errorOf(() => renderText('{{ data.count | plural: "one: # x" }}', 'en', { count: 2 }));
    expect(err.message).toContain('needs an "other: ..." form');
  });

  test('Text in any script renders whole: emoji, CJK and RTL', async () => {
    const text = '{{ data.name }} 👋 — مرحبا {{ data.city }} 你好';
    expect(await renderText(text, 'ar', { name: 'سارة', city: '東京' })).toBe('سارة 👋 — مرحبا 東京 你好');
  });
});

describe('email', () => {
  test('HTML gets its CSS inlined, a text part is derived, and data is escaped (no <script> gets through)', async () => {
    const { catalog, renderer } = await setup();
    await catalog.upsert({
      category: 'orders',
      channel: 'email',
      locale: 'en',
      content: {
        subject: 'Order {{ data.id }} for {{ data.name }}',
        html: '<style>p.lead { color: #c00; }</style><p class="lead">Hello {{ data.name }}</p><ul>{% for i in data.items %}<li>{{ i }}</li>{% endfor %}</ul>',
      },
    });
    const r = await renderer.render({
      category: 'orders',
      channel: 'email',
      locale: 'en',
      timeZone: '',
      data: { id: 7, name: '<script>alert(1)</script>', items: ['a & b', 'c'] },
    });
    const { subject, html, text } = r!.content;
    // The subject is plain text: not HTML-escaped.
    expect(subject).toBe('Order 7 for <script>alert(1)</script>');
    expect(html).toContain('<p class="lead" style="color: #c00;">');
    expect(html).not.toContain('<style>');
    expect(html).not.toContain('<script>');
    expect(html).toContain('Hello &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('<li>a &amp; b</li><li>c</li>');
    expect(text).toContain('Hello <script>alert(1)</script>');
    expect(text).toContain('a & b');
  });

  test('A given text part is rendered, not derived', async () => {
    const { catalog, renderer } = await setup();
    await catalog.upsert({
      category: 'orders',
      channel: 'email',
      locale: 'en',
      content: { subject: 's', html: '<b>{{ data.x }}</b>', text: 'plain {{ data.x }}' },
    });
    const r = await renderer.render({
      category: 'orders',
      channel: 'email',
      locale: 'en',
      timeZone: '',
      data: { x: 1 },
    });
    expect(r!.content).toEqual({ subject: 's', html: '<b>1</b>', text: 'plain 1' });
  });
});

describe('overrides, push data, user', () => {
  test('Override parts replace the template’s; with no template, an override that gives every part renders', async () => {
    const { catalog, renderer } = await setup();
    await catalog.upsert({
      category: 'orders',
      channel: 'inbox',
      locale: 'en',
      content: { title: 'T', body: 'B' },
    });
    const r = await renderer.render({
      category: 'orders',
      channel: 'inbox',
      locale: 'en',
      timeZone: '',
      data: { x: 'y' },
      override: { title: 'Now {{ data.x }}' },
    });
    expect(r!.content).toEqual({ title: 'Now y', body: 'B' });
    const alone = await renderer.render({
      category: 'orders',
      channel: 'sms',
      locale: 'es',
      timeZone: '',
      data: {},
      override: { text: 'hola' },
    });
    expect(alone).toEqual({ content: { text: 'hola' }, locale: 'es' });
    const bad = await errorOf(() =>
      renderer.render({
        category: 'orders',
        channel: 'sms',
        locale: 'es',
        timeZone: '',
        data: {},
        override: { subject: 'x' },
      }),
    );
    expect(bad).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'override.subject' });
  });

  test('Push data renders every string value, nested; the user is readable as user', async () => {
    const { catalog, renderer } = await setup();
    await catalog.upsert({
      category: 'orders',
      channel: 'push',
      locale: 'en',
      content: {
        title: 'Hi {{ user.attributes.first_name }}',
        data: { url: '/o/{{ data.id }}', n: 3, deep: { k: ['{{ data.id }}'] } },
      },
    });
    const r = await renderer.render({
      category: 'orders',
      channel: 'push',
      locale: 'en',
      timeZone: '',
      data: { id: 'x1' },
      user: { user_id: 'u1', attributes: { first_name: 'Zoë' } },
    });
    expect(r!.content).toEqual({ title: 'Hi Zoë', data: { url: '/o/x1', n: 3, deep: { k: ['x1'] } } });
  });
});

describe('bounds', () => {
  test('An output over max_render_bytes is INVALID_ARGUMENT; at the bound it renders', async () => {
    const { catalog, renderer } = await setup({ max_render_bytes: 40 });
    await catalog.upsert({
      category: 'orders',
      channel: 'sms',
      locale: 'en',
      content: { text: '{{ data.s }}' },
    });
    const render = (s: string) =>
      renderer.render({ category: 'orders', channel: 'sms', locale: 'en', timeZone: '', data: { s } });
    // 10 emoji = 40 UTF-8 bytes: at the bound.
    expect((await render('😀'.repeat(10)))!.content.text).toBe('😀'.repeat(10));
    const err = await errorOf(() => render(`${'😀'.repeat(10)}a`));
    expect(err.message).toContain('renders to more than 40 bytes');
  });

  test('A capture is bounded as it grows: doubling a variable past max_render_bytes is refused even when little is output', async () => {
    // Before, only the final output was measured: a capture doubled 25 times built a 335 MB string
    // (the memory limit counts filters, not writes) and `| size` printed it as a few digits.
    const { catalog, renderer } = await setup({ max_render_bytes: 1000 });
    await catalog.upsert({
      category: 'orders',
      channel: 'sms',
      locale: 'en',
      content: {
        text: '{% assign s = data.s %}{% for i in (1..12) %}{% capture s %}{{ s }}{{ s }}{% endcapture %}{% endfor %}{{ s | size }}',
      },
    });
    const err = await errorOf(() =>
      renderer.render({
        category: 'orders',
        channel: 'sms',
        locale: 'en',
        timeZone: '',
        data: { s: '😀漢ع' },
      }),
    );
    expect(err).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'data' });
    expect(err.message).toContain('text renders to more than 1000 bytes');
  });

  test('The output stops at max_render_bytes while it is written, not after the render', async () => {
    // The size error comes at the write that crosses the bound: the missing variable after the
    // loop is never reached (before, the loop ran to its end and the missing variable was reported).
    const { catalog, renderer } = await setup({ max_render_bytes: 1000 });
    await catalog.upsert({
      category: 'orders',
      channel: 'sms',
      locale: 'en',
      content: { text: '{% for i in (1..1000) %}{{ data.s }}{% endfor %}{{ data.missing }}' },
    });
    const err = await errorOf(() =>
      renderer.render({
        category: 'orders',
        channel: 'sms',
        locale: 'en',
        timeZone: '',
        data: { s: 'שלום 😀' },
      }),
    );
    expect(err.message).toContain('text renders to more than 1000 bytes');
    // A capture and a loop well inside the bound render whole.
    await catalog.upsert({
      category: 'orders',
      channel: 'sms',
      locale: 'en',
      content: {
        text: '{% capture s %}{% for i in (1..3) %}{{ data.s }}{% endfor %}{% endcapture %}{{ s }}',
      },
    });
    const r = await renderer.render({
      category: 'orders',
      channel: 'sms',
      locale: 'en',
      timeZone: '',
      data: { s: 'שלום 😀' },
    });
    expect(r!.content.text).toBe('שלום 😀'.repeat(3));
  });

  test('A loop that would allocate past the memory limit is stopped with INVALID_ARGUMENT', async () => {
    const { catalog, renderer } = await setup();
    await catalog.upsert({
      category: 'orders',
      channel: 'sms',
      locale: 'en',
      content: {
        text: '{% for i in (1..100000000) %}{% for j in (1..100000000) %}x{% endfor %}{% endfor %}',
      },
    });
    const err = await errorOf(() =>
      renderer.render({ category: 'orders', channel: 'sms', locale: 'en', timeZone: '', data: {} }),
    );
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toContain('exceeds the render limits');
  });

  test('CSS inlining is bounded: selectors x elements past MAX_CSS_INLINE_WORK is refused, at the bound it is inlined', async () => {
    // juice runs each selector over the whole document, synchronously: a 64 KiB part held the
    // process over 30 s at each upsert, and at each Notify giving it as an override.
    const { catalog } = await setup();
    // 100 selectors (two rules of 50, one commented-out rule not counted) over n elements.
    const css =
      Array.from({ length: 50 }, (_, i) => `.k${i}`).join(', ') +
      ' { color: red } /* .gone { x: y } */ ' +
      Array.from({ length: 50 }, (_, i) => `p .j${i}`).join(',') +
      ' { color: blue }';
    const html = (n: number) => `<style>${css}</style>${'<p>שלום 😀 字</p>'.repeat(n)}`;
    expect(cssInlineWork(html(2500))).toEqual({ selectors: 100, elements: 2500 });
    const at = await catalog.upsert({
      category: 'orders',
      channel: 'email',
      locale: 'en',
      content: { subject: 'S', html: html(MAX_CSS_INLINE_WORK / 100) },
    });
    expect(at.template.content.html).toContain('<style>');
    const err = await errorOf(() =>
      catalog.upsert({
        category: 'orders',
        channel: 'email',
        locale: 'en',
        content: { subject: 'S', html: html(MAX_CSS_INLINE_WORK / 100 + 1) },
      }),
    );
    expect(err).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'content.html' });
    expect(err.message).toContain('its CSS is too costly to inline (100 selectors x 2501 elements');
  });

  test('A source of max_source_bytes is taken, one byte more is refused (counted in UTF-8)', async () => {
    const { catalog } = await setup({ max_source_bytes: 12 });
    await catalog.upsert({ category: 'orders', channel: 'sms', locale: 'en', content: { text: '漢字漢字' } });
    const err = await errorOf(() =>
      catalog.upsert({ category: 'orders', channel: 'sms', locale: 'en', content: { text: '漢字漢字a' } }),
    );
    expect(err).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'content.text' });
    expect(err.message).toContain('longer than 12 bytes');
  });

  test('The parse cache holds at most parse_cache_size templates, and a render reuses the parse', async () => {
    const { catalog, renderer, engine } = await setup({ parse_cache_size: 3 });
    for (const locale of ['en', 'es', 'de', 'fr', 'ja']) {
      await catalog.upsert({
        category: 'orders',
        channel: 'sms',
        locale,
        content: { text: `[${locale}] {{ data.x }}` },
      });
    }
    expect(engine.cachedCount).toBe(3);
    const first = engine.parse('[fr] {{ data.x }}', 'text', 'text');
    await renderer.render({ category: 'orders', channel: 'sms', locale: 'fr', timeZone: '', data: { x: 1 } });
    expect(engine.parse('[fr] {{ data.x }}', 'text', 'text')).toBe(first);
    expect(engine.cachedCount).toBe(3);
  });
});
