/* global ConsoleKit, window, AbortController */
// The console's templates section (sections/templates.ts): the templates by name, and an editor of
// one variant (channel, locale) with a textarea per part the channel has, sample data as JSON, and
// a live preview rendered by the server as the operator types (debounced; an older answer never
// overwrites a newer one), the SMS segment count, and a syntax error with its line and column.
'use strict';

(function () {
  const { api, el, formatTime, notice } = ConsoleKit;
  const PREVIEW_DELAY_MS = 300;
  const SAMPLE = '{\n  "name": "Jane"\n}';

  let root = null;
  let detail = null; // GET templates/:name answer
  let timer = null;
  let seq = 0; // the latest preview asked for
  let controller = null;

  const byId = (id) => root.querySelector('#' + id);

  function mount(container) {
    root = container;
    root.append(
      el('h1', { text: 'Templates' }),
      el(
        'div',
        { class: 'table-wrap', id: 'tpl-list' },
        el(
          'table',
          { class: 'rows' },
          el(
            'thead',
            {},
            el(
              'tr',
              {},
              ...['Name', 'Channels', 'Locales', 'Updated'].map((h) => el('th', { scope: 'col', text: h })),
            ),
          ),
          el('tbody', { id: 'tpl-rows' }),
        ),
      ),
      el('div', { id: 'tpl-editor', hidden: true }),
      el('p', { id: 'tpl-load-error', class: 'error-text', role: 'alert' }),
    );
  }

  async function showList() {
    byId('tpl-list').hidden = false;
    byId('tpl-editor').hidden = true;
    try {
      const page = await api('templates');
      byId('tpl-rows').replaceChildren(
        ...page.items.map((t) =>
          el(
            'tr',
            {},
            el('td', {}, el('a', { href: '#/templates/' + encodeURIComponent(t.name), text: t.name })),
            el('td', { text: t.channels.join(', ') }),
            el('td', { text: t.locales.length ? t.locales.join(', ') : '—' }),
            el(
              'td',
              {},
              t.updated_at ? el('time', { datetime: t.updated_at, text: formatTime(t.updated_at) }) : '—',
            ),
          ),
        ),
      );
    } catch (err) {
      byId('tpl-load-error').textContent = err.message;
    }
  }

  async function showEditor(name) {
    byId('tpl-list').hidden = true;
    const editor = byId('tpl-editor');
    editor.hidden = false;
    byId('tpl-load-error').textContent = '';
    try {
      detail = await api('templates/' + encodeURIComponent(name));
    } catch (err) {
      byId('tpl-load-error').textContent = err.message;
      return;
    }
    const channel = el('select', { id: 'tpl-channel', onchange: fillParts });
    for (const c of detail.channels) channel.append(el('option', { value: c, text: c }));
    const first = detail.variants[0];
    editor.replaceChildren(
      el('p', {}, el('a', { href: '#/templates', text: '← All templates' })),
      el('h2', { id: 'tpl-title', text: detail.name }),
      el(
        'div',
        { class: 'filters' },
        el('label', {}, 'Channel', channel),
        el(
          'label',
          {},
          'Locale',
          el('input', { id: 'tpl-locale', value: first ? first.locale : 'en', onchange: fillParts }),
        ),
        el('span', { class: 'muted', id: 'tpl-variants', text: 'Saved: ' + variantList() }),
      ),
      el(
        'div',
        { class: 'tpl-grid' },
        el(
          'div',
          { class: 'tpl-pane' },
          el('div', { id: 'tpl-parts' }),
          el(
            'label',
            { class: 'tpl-part' },
            'Sample data (JSON)',
            el('textarea', { id: 'tpl-data', rows: 5, spellcheck: 'false', oninput: schedulePreview }),
          ),
          el('p', { id: 'tpl-error', class: 'error-text', role: 'alert' }),
          el('button', { type: 'button', class: 'primary', id: 'tpl-save', text: 'Save', onclick: save }),
        ),
        el(
          'div',
          { class: 'tpl-pane', 'aria-live': 'polite' },
          el('h3', { text: 'Preview' }),
          el('p', { id: 'tpl-sms', class: 'muted', hidden: true }),
          el('div', { id: 'tpl-preview' }),
        ),
      ),
    );
    byId('tpl-data').value = SAMPLE;
    if (first) channel.value = first.channel;
    fillParts();
  }

  function variantList() {
    return detail.variants.length
      ? detail.variants.map((v) => v.channel + '/' + v.locale).join(', ')
      : 'none';
  }

  /** The textareas of the chosen channel's parts, filled from the saved variant of that locale. */
  function fillParts() {
    const channel = byId('tpl-channel').value;
    const locale = byId('tpl-locale').value.trim();
    const saved = detail.variants.find((v) => v.channel === channel && v.locale === locale);
    const parts = detail.parts[channel] || [];
    byId('tpl-parts').replaceChildren(
      ...parts.map((part) => {
        const value = saved && saved.content[part] !== undefined ? saved.content[part] : '';
        const area = el('textarea', {
          id: 'tpl-part-' + part,
          'data-part': part,
          rows: part === 'html' ? 10 : part === 'subject' || part === 'title' ? 2 : 5,
          spellcheck: 'false',
          oninput: schedulePreview,
        });
        area.value = part === 'data' && value ? JSON.stringify(value, null, 2) : value;
        return el('label', { class: 'tpl-part' }, part + (part === 'data' ? ' (JSON)' : ''), area);
      }),
    );
    schedulePreview();
  }

  /** The parts as typed; throws a message for push data that is not JSON. */
  function typedContent() {
    const content = {};
    for (const area of byId('tpl-parts').querySelectorAll('textarea')) {
      const part = area.dataset.part;
      if (area.value === '') continue;
      if (part === 'data') {
        try {
          content.data = JSON.parse(area.value);
        } catch {
          throw new Error('data is not valid JSON');
        }
      } else content[part] = area.value;
    }
    return content;
  }

  function showTemplateError(error) {
    const box = byId('tpl-error');
    box.replaceChildren();
    if (!error) return;
    if (error.line !== undefined) {
      box.append(
        el('strong', {
          class: 'tpl-position',
          text: (error.field ? error.field + ': ' : '') + 'line ' + error.line + ', column ' + error.column,
        }),
        ' ',
      );
    }
    box.append(error.message);
  }

  function schedulePreview() {
    if (timer) window.clearTimeout(timer);
    timer = window.setTimeout(() => void preview(), PREVIEW_DELAY_MS);
  }

  async function preview() {
    timer = null;
    const mine = ++seq;
    if (controller) controller.abort();
    controller = new AbortController();
    let content;
    let data;
    try {
      content = typedContent();
      data = JSON.parse(byId('tpl-data').value || '{}');
    } catch (err) {
      showTemplateError({
        message: err instanceof SyntaxError ? 'the sample data is not valid JSON' : err.message,
      });
      return;
    }
    try {
      const answer = await api('templates/preview', {
        method: 'POST',
        signal: controller.signal,
        body: {
          name: detail.name,
          channel: byId('tpl-channel').value,
          locale: byId('tpl-locale').value.trim(),
          template: content,
          data,
        },
      });
      if (mine !== seq) return; // a newer preview was asked for
      showTemplateError(null);
      drawPreview(answer);
    } catch (err) {
      if (mine !== seq || err.name === 'AbortError') return;
      showTemplateError(errorOf(err));
    }
  }

  /**
   * The error's line and column: fields of the error body (ApiError.details); an older server's
   * message ends with "(line L, column C)" (and names the part first: "template.text: ...").
   */
  function errorOf(err) {
    const d = err.details || {};
    if (typeof d.line === 'number' && typeof d.column === 'number') {
      return { message: err.message, line: d.line, column: d.column, field: d.field || '' };
    }
    const at = /line (\d+), column (\d+)/.exec(err.message);
    const field = /^([a-z]+\.[a-z.[\]0-9]+): /.exec(err.message);
    return at
      ? { message: err.message, line: Number(at[1]), column: Number(at[2]), field: field ? field[1] : '' }
      : { message: err.message };
  }

  function drawPreview(answer) {
    const out = byId('tpl-preview');
    out.replaceChildren();
    for (const [part, value] of Object.entries(answer.content)) {
      const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
      out.append(el('h4', { text: part }), el('pre', { class: 'tpl-rendered', 'data-part': part, text }));
    }
    const sms = byId('tpl-sms');
    sms.hidden = !answer.sms;
    if (answer.sms) {
      sms.textContent =
        answer.sms.segments +
        (answer.sms.segments === 1 ? ' segment' : ' segments') +
        ' · ' +
        answer.sms.encoding +
        ' · ' +
        answer.sms.units +
        (answer.sms.encoding === 'GSM-7' ? ' septets' : ' UTF-16 units');
    }
  }

  async function save() {
    let content;
    try {
      content = typedContent();
    } catch (err) {
      showTemplateError({ message: err.message });
      return;
    }
    try {
      const answer = await api('templates/' + encodeURIComponent(detail.name), {
        method: 'PUT',
        body: { channel: byId('tpl-channel').value, locale: byId('tpl-locale').value.trim(), content },
      });
      showTemplateError(null);
      const v = answer.variant;
      detail.variants = detail.variants.filter((x) => !(x.channel === v.channel && x.locale === v.locale));
      detail.variants.push(v);
      byId('tpl-variants').textContent = 'Saved: ' + variantList();
      notice('Saved ' + detail.name + ' (' + v.channel + ', ' + v.locale + ').');
    } catch (err) {
      showTemplateError(errorOf(err));
    }
  }

  ConsoleKit.register('templates', {
    title: 'Templates',
    mount,
    show(rest) {
      if (rest.length > 0) void showEditor(rest[0]);
      else void showList();
    },
  });
})();
