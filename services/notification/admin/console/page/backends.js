/* global ConsoleKit, AbortController, document, window, setTimeout, clearTimeout */
// The console's backends section (sections/backends.ts): every channel's backends with health and
// circuit badges, queue depth and the last hour's outcomes, refreshed every few seconds while shown.
'use strict';

(function () {
  const { api, el, formatTime, register, current } = ConsoleKit;
  const REFRESH_MS = 5000;

  let body = null;
  let updated = null;
  let timer = null;
  let inFlight = null;

  function mount(container) {
    body = el('div', { id: 'backends-table', 'aria-live': 'polite' });
    updated = el('p', { class: 'muted', id: 'backends-updated' });
    container.append(el('h1', { text: 'Backends' }), updated, body);
    document.addEventListener('visibilitychange', () => {
      if (document.hidden) stop();
      else if (current() === 'backends') schedule(0);
    });
    window.addEventListener('hashchange', () => {
      if (current() !== 'backends') stop();
    });
  }

  function stop() {
    clearTimeout(timer);
    timer = null;
    if (inFlight) inFlight.abort();
    inFlight = null;
  }

  function schedule(ms) {
    clearTimeout(timer);
    timer = setTimeout(refresh, ms);
  }

  function show() {
    schedule(0);
  }

  function badge(value, label) {
    return el('span', { class: 'status', 'data-status': value, text: label || value.replace('_', '-') });
  }

  async function refresh() {
    if (current() !== 'backends' || document.hidden) return stop();
    if (inFlight) inFlight.abort();
    inFlight = new AbortController();
    const signal = inFlight.signal;
    try {
      const answer = await api('backends', { signal });
      if (signal.aborted) return;
      draw(answer.items);
      updated.textContent =
        'Updated ' + formatTime(answer.checked_at) + ' · refreshes every 5 s · outcomes over the last hour';
    } catch (err) {
      if (signal.aborted) return;
      updated.textContent = 'Cannot refresh: ' + err.message;
    }
    if (current() === 'backends') schedule(REFRESH_MS);
  }

  function draw(items) {
    if (items.length === 0) {
      body.replaceChildren(el('p', { class: 'muted', text: 'No backend is configured.' }));
      return;
    }
    const headers = [
      'Backend',
      'Channel',
      'Kind',
      'Health',
      'Circuit',
      'Queued',
      'Sent',
      'Failed',
      'Retried',
    ];
    const rows = items.map((b) => {
      const health = el('td', { 'data-label': 'Health' }, badge(b.health.status));
      if (b.health.message) health.append(el('div', { class: 'muted small', text: b.health.message }));
      const circuit = el('td', { 'data-label': 'Circuit' }, badge(b.circuit.state));
      if (b.circuit.until)
        circuit.append(el('div', { class: 'muted small', text: 'until ' + formatTime(b.circuit.until) }));
      return el(
        'tr',
        { 'data-backend': b.channel + '/' + b.name },
        el(
          'th',
          { scope: 'row' },
          b.name,
          b.primary ? el('span', { class: 'muted small', text: ' (primary)' }) : null,
        ),
        el('td', { 'data-label': 'Channel', text: b.channel }),
        el('td', { 'data-label': 'Kind', text: b.kind }),
        health,
        circuit,
        el('td', { class: 'num', 'data-label': 'Queued', text: String(b.queue_depth) }),
        el('td', { class: 'num', 'data-label': 'Sent', text: String(b.outcomes.sent) }),
        el('td', { class: 'num', 'data-label': 'Failed', text: String(b.outcomes.failed) }),
        el('td', { class: 'num', 'data-label': 'Retried', text: String(b.outcomes.retried) }),
      );
    });
    body.replaceChildren(
      el(
        'div',
        { class: 'table-wrap' },
        el(
          'table',
          { class: 'rows backends stack' },
          el('caption', { class: 'sr-only', text: 'Backends' }),
          el('thead', {}, el('tr', {}, ...headers.map((h) => el('th', { scope: 'col', text: h })))),
          el('tbody', {}, ...rows),
        ),
      ),
    );
  }

  register('backends', { title: 'Backends', mount, show });
})();
