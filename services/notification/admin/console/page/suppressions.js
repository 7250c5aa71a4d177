/* global ConsoleKit, AbortController, URLSearchParams */
// The console's suppressions section (sections/suppressions.ts): the list (one channel or all,
// newest first, recipients masked), an exact search by recipient, an add form and a remove form,
// both with the operator's reason; a removal is confirmed first. Removing needs the whole recipient
// (the list shows it masked): a search result's Remove button fills it in from the search.
'use strict';

(function () {
  const { api, el, formatTime, notice } = ConsoleKit;
  const CHANNELS = ['email', 'sms', 'push'];
  const KINDS = [
    'manual',
    'hard_bounce',
    'spam_complaint',
    'unsubscribed',
    'invalid_recipient',
    'unregistered_token',
  ];

  let root = null;
  let nextCursor = null;
  let searched = null; // { channel, q } of the rows shown, when they are a search's
  let controller = null;

  const byId = (id) => root.querySelector('#' + id);

  function channelSelect(id, withAll) {
    const select = el('select', { id, name: id });
    if (withAll) select.append(el('option', { value: '', text: 'All channels' }));
    for (const c of CHANNELS) select.append(el('option', { value: c, text: c }));
    return select;
  }

  function field(label, control) {
    return el('label', {}, label, control);
  }

  function mount(container) {
    root = container;
    const filters = el(
      'form',
      { class: 'filters', id: 'sup-filters', role: 'search', onsubmit: onSearch },
      field('Channel', channelSelect('sup-channel', true)),
      field(
        'Recipient (exact)',
        el('input', { id: 'sup-q', type: 'search', autocomplete: 'off', placeholder: 'jane@example.com' }),
      ),
      el('button', { type: 'submit', class: 'primary', text: 'Search' }),
      el('button', { type: 'button', id: 'sup-clear', text: 'Clear', onclick: onClear }),
    );
    const table = el(
      'table',
      { class: 'rows', id: 'sup-table' },
      el(
        'thead',
        {},
        el(
          'tr',
          {},
          ...['Channel', 'Recipient', 'Kind', 'Source', 'Added', ''].map((h) =>
            el('th', { scope: 'col', text: h }),
          ),
        ),
      ),
      el('tbody', { id: 'sup-rows' }),
    );
    const addForm = el(
      'form',
      { class: 'filters', id: 'sup-add', onsubmit: onAdd },
      field('Channel', channelSelect('sup-add-channel', false)),
      field('Recipient', el('input', { id: 'sup-add-recipient', required: true, autocomplete: 'off' })),
      field('Kind', kindSelect()),
      field('Reason', el('input', { id: 'sup-add-reason', required: true, autocomplete: 'off' })),
      el('button', { type: 'submit', class: 'primary', text: 'Add' }),
    );
    const removeForm = el(
      'form',
      { class: 'filters', id: 'sup-remove', onsubmit: onAskRemove },
      field('Channel', channelSelect('sup-remove-channel', false)),
      field('Recipient', el('input', { id: 'sup-remove-recipient', required: true, autocomplete: 'off' })),
      field('Reason', el('input', { id: 'sup-remove-reason', required: true, autocomplete: 'off' })),
      el('button', { type: 'submit', class: 'danger', text: 'Remove…' }),
    );
    const confirmBox = el(
      'div',
      {
        id: 'sup-confirm',
        class: 'sup-confirm',
        role: 'alertdialog',
        'aria-labelledby': 'sup-confirm-text',
        hidden: true,
      },
      el('p', { id: 'sup-confirm-text' }),
      el('button', {
        type: 'button',
        class: 'danger',
        id: 'sup-confirm-yes',
        text: 'Confirm removal',
        onclick: onRemove,
      }),
      el('button', { type: 'button', id: 'sup-confirm-no', text: 'Cancel', onclick: hideConfirm }),
    );
    root.append(
      el('h1', { text: 'Suppressions' }),
      filters,
      el('div', { class: 'table-wrap' }, table),
      el('p', { id: 'sup-empty', class: 'muted', text: 'No entries.', hidden: true }),
      el('button', {
        type: 'button',
        id: 'sup-more',
        text: 'Load more',
        hidden: true,
        onclick: () => load(true),
      }),
      el('h2', { text: 'Add a suppression' }),
      addForm,
      el('h2', { text: 'Remove a suppression' }),
      el('p', {
        class: 'muted',
        text: 'Give the whole recipient (the list shows it masked). An SMS STOP is lifted only by the recipient’s START.',
      }),
      removeForm,
      confirmBox,
      el('p', { id: 'sup-error', class: 'error-text', role: 'alert' }),
    );
  }

  function kindSelect() {
    const select = el('select', { id: 'sup-add-kind' });
    for (const k of KINDS) select.append(el('option', { value: k, text: k.replace(/_/g, ' ') }));
    return select;
  }

  function showError(text) {
    byId('sup-error').textContent = text || '';
  }

  function row(item) {
    const remove =
      searched && searched.q
        ? el('button', {
            type: 'button',
            class: 'danger',
            text: 'Remove…',
            'aria-label': 'Remove ' + item.recipient + ' (' + item.channel + ')',
            onclick: () => {
              byId('sup-remove-channel').value = item.channel;
              byId('sup-remove-recipient').value = searched.q;
              byId('sup-remove-reason').focus();
            },
          })
        : null;
    return el(
      'tr',
      { 'data-channel': item.channel },
      el('td', { text: item.channel }),
      el('td', { class: 'sup-recipient', text: item.recipient }),
      el(
        'td',
        {},
        el('span', { class: 'status', 'data-status': item.kind, text: item.kind.replace(/_/g, ' ') }),
      ),
      el('td', { text: item.source || '—' }),
      el(
        'td',
        {},
        item.created_at ? el('time', { datetime: item.created_at, text: formatTime(item.created_at) }) : '—',
      ),
      el('td', {}, remove),
    );
  }

  async function load(more) {
    if (controller) controller.abort();
    controller = new AbortController();
    const channel = byId('sup-channel').value;
    const q = byId('sup-q').value.trim();
    const params = new URLSearchParams();
    if (channel) params.set('channel', channel);
    if (q) params.set('q', q);
    if (more && nextCursor) params.set('cursor', nextCursor);
    showError('');
    try {
      const page = await api('suppressions?' + params, { signal: controller.signal });
      searched = { channel, q };
      const body = byId('sup-rows');
      if (!more) body.replaceChildren();
      for (const item of page.items) body.append(row(item));
      nextCursor = page.next_cursor;
      byId('sup-more').hidden = !nextCursor;
      byId('sup-empty').hidden = body.children.length > 0;
    } catch (err) {
      if (err.name !== 'AbortError') showError(err.message);
    }
  }

  function onSearch(event) {
    event.preventDefault();
    void load(false);
  }

  function onClear() {
    byId('sup-q').value = '';
    byId('sup-channel').value = '';
    void load(false);
  }

  async function onAdd(event) {
    event.preventDefault();
    showError('');
    try {
      const answer = await api('suppressions', {
        method: 'POST',
        body: {
          channel: byId('sup-add-channel').value,
          recipient: byId('sup-add-recipient').value,
          kind: byId('sup-add-kind').value,
          reason: byId('sup-add-reason').value,
        },
      });
      notice(
        answer.created
          ? 'Suppressed ' + answer.item.recipient + ' on ' + answer.item.channel + '.'
          : answer.item.recipient + ' was suppressed already.',
      );
      byId('sup-add-recipient').value = '';
      byId('sup-add-reason').value = '';
      await load(false);
    } catch (err) {
      showError(err.message);
    }
  }

  function onAskRemove(event) {
    event.preventDefault();
    showError('');
    const channel = byId('sup-remove-channel').value;
    byId('sup-confirm-text').textContent =
      'Remove ' +
      byId('sup-remove-recipient').value.trim() +
      ' from the ' +
      channel +
      ' suppression list? Messages to it will be sent again.';
    byId('sup-confirm').hidden = false;
    byId('sup-confirm-yes').focus();
  }

  function hideConfirm() {
    byId('sup-confirm').hidden = true;
  }

  async function onRemove() {
    hideConfirm();
    try {
      await api('suppressions/remove', {
        method: 'POST',
        body: {
          channel: byId('sup-remove-channel').value,
          recipient: byId('sup-remove-recipient').value,
          reason: byId('sup-remove-reason').value,
        },
      });
      notice('Suppression removed.');
      byId('sup-remove-recipient').value = '';
      byId('sup-remove-reason').value = '';
      await load(false);
    } catch (err) {
      showError(err.message);
    }
  }

  ConsoleKit.register('suppressions', {
    title: 'Suppressions',
    mount,
    show() {
      void load(false);
    },
  });
})();
