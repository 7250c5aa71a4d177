/* global ConsoleKit, URLSearchParams, setTimeout, clearTimeout, AbortController, FormData */
// The console's Activity section (services/notification/admin/console/sections/activity.ts):
// deliveries newest first under the operator's filters, a live feed that prepends new matching rows
// and updates a row's status in place, "More" for the next page, and one message's timeline at
// #/activity/delivery/<id>. Every text from the server goes in with textContent (ConsoleKit.el).
'use strict';

(function () {
  const K = ConsoleKit;
  const el = K.el;
  const CHANNELS = ['email', 'sms', 'push'];
  const STATUSES = ['pending', 'retrying', 'sent', 'delivered', 'undelivered', 'failed'];
  const TEXT_FILTERS = [
    ['category', 'Category'],
    ['backend', 'Backend'],
    ['user', 'User'],
    ['recipient', 'Recipient (exact)'],
  ];
  const RECONNECT_MS = 3000;

  let listView;
  let detailView;
  let form;
  let tbody;
  let more;
  let live;
  let empty;
  let detail;
  let query = '';
  let nextCursor = null;
  let loaded = false;
  let streamControl = null;
  let reconnectTimer = null;
  let listRequest = null;

  function select(name, label, values) {
    return el(
      'label',
      {},
      label,
      el(
        'select',
        { name, id: 'activity-' + name },
        el('option', { value: '', text: 'any' }),
        ...values.map((v) => el('option', { value: v, text: v })),
      ),
    );
  }

  function statusBadge(status) {
    return el('span', { class: 'status', 'data-status': status, text: status });
  }

  function rowOf(d) {
    const open = () => K.navigate('activity', 'delivery', d.id);
    const tr = el(
      'tr',
      { 'data-id': d.id, class: 'activity-row', onclick: open },
      el(
        'td',
        {},
        el(
          'a',
          { href: '#/activity/delivery/' + encodeURIComponent(d.id) },
          el('time', { datetime: d.created_at, text: K.formatTime(d.created_at) }),
        ),
      ),
      el('td', { class: 'activity-status' }, statusBadge(d.status)),
      el('td', { text: d.channel }),
      el('td', { class: 'activity-backend', text: d.backend }),
      el('td', { text: d.recipient }),
      el('td', { text: d.user_id || '' }),
      el('td', { text: d.category || '' }),
      el('td', { class: 'activity-attempts', text: String(d.attempts) }),
    );
    return tr;
  }

  function updateRow(tr, d) {
    tr.querySelector('.activity-status').replaceChildren(statusBadge(d.status));
    tr.querySelector('.activity-backend').textContent = d.backend;
    tr.querySelector('.activity-attempts').textContent = String(d.attempts);
  }

  function findRow(id) {
    for (const tr of tbody.children) if (tr.dataset.id === id) return tr;
    return null;
  }

  function formQuery() {
    const params = new URLSearchParams();
    for (const [key, value] of new FormData(form)) {
      const v = String(value).trim();
      if (v !== '') params.set(key, v);
    }
    return params.toString();
  }

  async function loadPage(append) {
    if (listRequest) listRequest.abort();
    const control = new AbortController();
    listRequest = control;
    const params = new URLSearchParams(query);
    if (append && nextCursor) params.set('cursor', nextCursor);
    try {
      const page = await K.api('activity/deliveries?' + params.toString(), { signal: control.signal });
      if (!append) tbody.replaceChildren();
      for (const d of page.items) if (!findRow(d.id)) tbody.append(rowOf(d));
      nextCursor = page.next_cursor;
      more.hidden = !nextCursor;
      empty.hidden = tbody.children.length > 0;
      K.notice('');
    } catch (err) {
      if (control.signal.aborted) return;
      K.notice('Deliveries could not be loaded: ' + err.message, 'error');
    }
  }

  function setLive(state) {
    live.dataset.state = state;
    live.textContent = state === 'live' ? '● Live' : state === 'connecting' ? '○ Connecting…' : '○ Offline';
  }

  function stopStream() {
    clearTimeout(reconnectTimer);
    if (streamControl) streamControl.abort();
    streamControl = null;
  }

  function startStream() {
    stopStream();
    const control = new AbortController();
    streamControl = control;
    setLive('connecting');
    K.stream(
      'activity/stream' + (query ? '?' + query : ''),
      {
        // The watch is open once the response starts (the server registers it before answering).
        onOpen() {
          setLive('live');
        },
        onEvent(type, data) {
          if (type === 'delivery' && data.delivery) {
            const existing = findRow(data.delivery.id);
            if (existing) updateRow(existing, data.delivery);
            else {
              tbody.prepend(rowOf(data.delivery));
              empty.hidden = true;
            }
          } else if (type === 'expired') {
            K.notice('The token has expired: sign in again for live updates.', 'error');
            control.abort();
          }
        },
      },
      control.signal,
    )
      .catch(() => undefined)
      .then(() => {
        if (control.signal.aborted || streamControl !== control) {
          if (streamControl === null || streamControl === control) setLive('offline');
          return;
        }
        setLive('offline');
        reconnectTimer = setTimeout(startStream, RECONNECT_MS);
      });
  }

  function apply(event) {
    if (event) event.preventDefault();
    query = formQuery();
    nextCursor = null;
    // The stream first: a row sent while the page loads is not missed (the list skips known ids).
    startStream();
    loadPage(false);
  }

  function describe(e) {
    switch (e.kind) {
      case 'submitted':
        return 'Submitted (' + e.channel + ', via ' + e.backend + ')';
      case 'attempt':
        return (
          'Attempt ' +
          e.number +
          ' via ' +
          e.backend +
          ': ' +
          e.outcome +
          ' (' +
          Math.round(e.duration_ms) +
          ' ms)' +
          (e.reason ? ' — ' + e.reason : '') +
          (e.provider_code ? ' [code ' + e.provider_code + ']' : '')
        );
      case 'failover':
        return 'Failover from ' + e.from + ' to ' + e.to;
      case 'sent':
        return 'Sent via ' + e.backend;
      case 'receipt':
        return (
          'Provider receipt: ' +
          e.event +
          ' (' +
          e.status +
          (e.provider_code ? ', code ' + e.provider_code : '') +
          ')' +
          (e.effect && e.effect !== 'applied' ? ' — ' + e.effect : '')
        );
      case 'delivered':
        return 'Delivered';
      case 'undelivered':
        return 'Undelivered' + (e.failure ? ' (' + e.failure + ')' : '');
      case 'failed':
        return 'Failed' + (e.failure ? ' (' + e.failure + ')' : '') + (e.reason ? ' — ' + e.reason : '');
      case 'suppressed':
        return (
          'Suppressed' +
          (e.recipients && e.recipients.length ? ': ' + e.recipients.join(', ') : '') +
          (e.reason ? ' — ' + e.reason : '')
        );
      case 'notified':
        return 'Notification accepted (' + e.category + ')';
      case 'scheduled':
        return 'Scheduled for ' + K.formatTime(e.send_at);
      case 'held_quiet_hours':
        return 'Held for quiet hours' + (e.until ? ' until ' + K.formatTime(e.until) : '');
      case 'held':
        return 'Held (' + (e.reason || 'deferred') + ')' + (e.until ? ' until ' + K.formatTime(e.until) : '');
      case 'digested':
        return 'Added to a digest';
      case 'throttled':
        return 'Throttled' + (e.by ? ' by ' + e.by : '');
      case 'skipped':
        return 'Skipped ' + e.channel + ' (' + e.reason + ')';
      case 'cancelled':
        return 'Cancelled';
      default:
        return e.kind;
    }
  }

  function timelineList(entries) {
    return el(
      'ol',
      { class: 'timeline' },
      ...entries.map((e) =>
        el(
          'li',
          { 'data-kind': e.kind },
          el('time', { datetime: e.at, text: K.formatTime(e.at) }),
          describe(e),
        ),
      ),
    );
  }

  function facts(pairs) {
    const dl = el('dl', { class: 'activity-facts' });
    for (const [label, value] of pairs) {
      if (value === null || value === undefined || value === '') continue;
      dl.append(el('dt', { text: label }), el('dd', { text: String(value) }));
    }
    return dl;
  }

  async function showDelivery(id) {
    listView.hidden = true;
    detailView.hidden = false;
    detail.replaceChildren(el('p', { class: 'muted', text: 'Loading…' }));
    let answer;
    try {
      answer = await K.api('activity/deliveries/' + encodeURIComponent(id) + '/timeline');
    } catch (err) {
      detail.replaceChildren(
        el('p', {
          class: 'error-text',
          text: err.status === 404 ? 'No such delivery.' : 'The timeline could not be loaded: ' + err.message,
        }),
      );
      return;
    }
    const d = answer.delivery;
    const parts = [
      el('h2', { text: 'Delivery ' + d.id }),
      facts([
        ['Status', d.status],
        ['Channel', d.channel],
        ['Backend', d.backend],
        ['Recipient', d.recipient],
        ['User', d.user_id],
        ['Category', d.category],
        ['Last error', d.last_error],
      ]),
      el('h3', { text: 'Timeline' }),
      timelineList(answer.timeline),
    ];
    if (answer.notification) {
      const n = answer.notification;
      parts.push(
        el('h3', { text: 'Notification' }),
        facts([
          ['Id', n.id],
          ['User', n.user_id],
          ['Category', n.category],
          ['Status', n.status],
          ['Priority', n.priority],
          ['Created', K.formatTime(n.created_at)],
          ['Send at', n.send_at ? K.formatTime(n.send_at) : null],
        ]),
      );
    }
    detail.replaceChildren(...parts);
  }

  function mount(container) {
    form = el(
      'form',
      { class: 'filters', role: 'search', 'aria-label': 'Delivery filters', onsubmit: apply },
      select('channel', 'Channel', CHANNELS),
      select('status', 'Status', STATUSES),
      ...TEXT_FILTERS.map(([name, label]) =>
        el(
          'label',
          {},
          label,
          el('input', { name, id: 'activity-' + name, type: 'search', autocomplete: 'off' }),
        ),
      ),
      el('button', { type: 'submit', class: 'primary', text: 'Apply' }),
    );
    live = el('span', { class: 'activity-live', role: 'status', 'data-state': 'offline', text: '○ Offline' });
    tbody = el('tbody', {});
    more = el('button', { type: 'button', hidden: true, text: 'More', onclick: () => loadPage(true) });
    empty = el('p', { class: 'muted', hidden: true, text: 'No deliveries match these filters.' });
    listView = el(
      'div',
      { class: 'activity-list' },
      el('div', { class: 'activity-head' }, el('h1', { text: 'Activity' }), live),
      form,
      el(
        'div',
        { class: 'table-wrap' },
        el(
          'table',
          { class: 'rows', id: 'activity-table' },
          el('caption', { class: 'muted', text: 'Deliveries, newest first' }),
          el(
            'thead',
            {},
            el(
              'tr',
              {},
              ...['Created', 'Status', 'Channel', 'Backend', 'Recipient', 'User', 'Category', 'Attempts'].map(
                (h) => el('th', { scope: 'col', text: h }),
              ),
            ),
          ),
          tbody,
        ),
      ),
      empty,
      more,
    );
    detail = el('div', { id: 'activity-detail' });
    detailView = el(
      'div',
      { class: 'activity-timeline', hidden: true },
      el('p', {}, el('a', { href: '#/activity', text: '← All deliveries' })),
      detail,
    );
    container.append(listView, detailView);
  }

  function show(rest) {
    if (rest[0] === 'delivery' && rest[1]) {
      showDelivery(rest[1]);
      return;
    }
    detailView.hidden = true;
    listView.hidden = false;
    if (!loaded) {
      loaded = true;
      apply();
    }
  }

  K.register('activity', { title: 'Activity', mount, show });
})();
