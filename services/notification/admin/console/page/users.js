/* global ConsoleKit, AbortController */
// The console's users section (sections/users.ts): look a user up by id, see their card (contact
// points and devices masked, quiet hours, preferences, latest notifications, unread count) and erase
// them after typing the id again. Routes: #/users (the lookup) and #/users/<id> (the card).
'use strict';

(function () {
  const { api, el, formatTime, notice, navigate, register } = ConsoleKit;

  let root = null;
  let card = null;
  let input = null;
  let loading = null;

  function mount(container) {
    root = container;
    input = el('input', {
      id: 'users-id',
      name: 'user_id',
      type: 'search',
      required: true,
      autocomplete: 'off',
      spellcheck: 'false',
    });
    const form = el(
      'form',
      {
        class: 'filters',
        role: 'search',
        'aria-label': 'Look up a user',
        onsubmit: (event) => {
          event.preventDefault();
          const id = input.value.trim();
          if (id) navigate('users', id);
        },
      },
      el('label', { for: 'users-id' }, 'User id', input),
      el('button', { type: 'submit', class: 'primary' }, 'Look up'),
    );
    card = el('div', { id: 'users-card', 'aria-live': 'polite' });
    root.append(el('h1', { text: 'Users' }), form, card);
  }

  function show(rest) {
    const id = rest[0];
    if (loading) loading.abort();
    card.replaceChildren();
    if (!id) {
      input.value = '';
      card.append(el('p', { class: 'muted', text: 'Type a user id to see their record.' }));
      return;
    }
    input.value = id;
    loading = new AbortController();
    const signal = loading.signal;
    card.append(el('p', { class: 'muted', text: 'Loading…' }));
    api('users/' + encodeURIComponent(id), { signal })
      .then((user) => {
        if (!signal.aborted) card.replaceChildren(drawCard(user));
      })
      .catch((err) => {
        if (signal.aborted) return;
        card.replaceChildren(
          el('p', {
            class: 'error-text',
            role: 'alert',
            text:
              err.status === 404
                ? 'No user with the id “' + id + '”.'
                : 'The user cannot be loaded: ' + err.message,
          }),
        );
      });
  }

  function field(label, value) {
    return [el('dt', { text: label }), el('dd', { text: value === '' ? '—' : value })];
  }

  function list(values) {
    if (values.length === 0) return el('span', { class: 'muted', text: 'none' });
    return el('ul', { class: 'plain' }, ...values.map((v) => el('li', { text: v })));
  }

  function table(caption, headers, rows, empty) {
    if (rows.length === 0) return el('p', { class: 'muted', text: empty });
    return el(
      'div',
      { class: 'table-wrap' },
      el(
        'table',
        { class: 'rows stack' },
        el('caption', { class: 'sr-only', text: caption }),
        el('thead', {}, el('tr', {}, ...headers.map((h) => el('th', { scope: 'col', text: h })))),
        el(
          'tbody',
          {},
          ...rows.map((cells) =>
            el('tr', {}, ...cells.map((c, i) => el('td', { 'data-label': headers[i] }, c))),
          ),
        ),
      ),
    );
  }

  function quietText(quiet) {
    if (quiet.windows.length === 0) return 'none';
    const days = ['', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];
    const text = quiet.windows
      .map(
        (w) =>
          (w.days.length ? w.days.map((d) => days[d]).join(',') + ' ' : 'every day ') + w.start + '–' + w.end,
      )
      .join('; ');
    return quiet.hold_email ? text + ' (email held too)' : text;
  }

  function drawCard(user) {
    const heading = el('h2', { id: 'users-card-title', text: user.user_id });
    const facts = el(
      'dl',
      { class: 'facts' },
      ...field('Locale', user.locale),
      ...field('Time zone', user.time_zone || 'UTC'),
      ...field('Quiet hours', quietText(user.quiet_hours)),
      ...field('Unread in inbox', String(user.inbox_unread)),
      ...field('Attributes', user.attribute_names.join(', ')),
      ...field('Created', formatTime(user.created_at)),
      ...field('Updated', formatTime(user.updated_at)),
    );
    const contacts = el(
      'dl',
      { class: 'facts' },
      el('dt', { text: 'Emails' }),
      el('dd', {}, list(user.emails)),
      el('dt', { text: 'Phones' }),
      el('dd', {}, list(user.phones)),
    );
    const devices = table(
      'Devices',
      ['Platform', 'Token', 'Backend', 'Registered'],
      user.devices.map((d) => [d.platform, d.token, d.backend || 'primary', formatTime(d.registered_at)]),
      'No devices.',
    );
    const preferences = table(
      'Preferences',
      ['Category', 'Channel', 'Enabled', 'Set by'],
      user.preferences.map((p) => [
        p.category,
        p.channel,
        el('span', {
          class: 'status',
          'data-status': p.enabled ? 'sent' : 'failed',
          text: p.enabled ? 'on' : 'off',
        }),
        p.required ? 'required' : p.chosen ? 'the user' : 'default',
      ]),
      'No categories are configured.',
    );
    const notifications = table(
      'Recent notifications',
      ['Created', 'Category', 'Status', 'Channels'],
      user.notifications.map((n) => [
        el('a', {
          href: '#/activity/notification/' + encodeURIComponent(n.id),
          text: formatTime(n.created_at),
        }),
        n.category,
        el('span', { class: 'status', 'data-status': n.status, text: n.status }),
        n.channels.map((c) => c.channel + (c.skipped ? ' (' + c.skipped + ')' : '')).join(', '),
      ]),
      'No notifications.',
    );
    const eraseButton = el(
      'button',
      { type: 'button', class: 'danger', onclick: () => openErase(user.user_id) },
      'Erase user…',
    );
    return el(
      'article',
      { class: 'user-card', 'aria-labelledby': 'users-card-title' },
      heading,
      facts,
      el('h3', { text: 'Contact points' }),
      contacts,
      el('h3', { text: 'Devices' }),
      devices,
      el('h3', { text: 'Preferences' }),
      preferences,
      el('h3', { text: 'Recent notifications' }),
      notifications,
      el('h3', { text: 'Erase' }),
      el('p', {
        class: 'muted',
        text: 'Erases the user everywhere: contact points, devices, preferences, inbox, notifications and delivery content.',
      }),
      eraseButton,
    );
  }

  function openErase(userId) {
    const typed = el('input', {
      id: 'users-erase-confirm',
      type: 'text',
      autocomplete: 'off',
      spellcheck: 'false',
    });
    const error = el('p', { class: 'error-text', role: 'alert' });
    const confirm = el('button', { type: 'submit', class: 'danger', disabled: true }, 'Erase');
    const cancel = el('button', { type: 'button', onclick: () => dialog.close() }, 'Cancel');
    typed.addEventListener('input', () => {
      confirm.disabled = typed.value !== userId;
    });
    const form = el(
      'form',
      {
        method: 'dialog',
        onsubmit: (event) => {
          event.preventDefault();
          if (typed.value !== userId) return;
          confirm.disabled = true;
          api('users/' + encodeURIComponent(userId) + '/erase', {
            method: 'POST',
            body: { confirm: typed.value },
          })
            .then(() => {
              dialog.close();
              notice('User “' + userId + '” erased.');
              navigate('users');
            })
            .catch((err) => {
              error.textContent = 'Not erased: ' + err.message;
              confirm.disabled = typed.value !== userId;
            });
        },
      },
      el('h2', { id: 'users-erase-title', text: 'Erase this user?' }),
      el('p', {}, 'This cannot be undone. Type the user id ', el('strong', { text: userId }), ' to confirm.'),
      el('label', { for: 'users-erase-confirm' }, 'User id'),
      typed,
      error,
      el('div', { class: 'dialog-buttons' }, cancel, confirm),
    );
    const dialog = el('dialog', { class: 'erase-dialog', 'aria-labelledby': 'users-erase-title' }, form);
    dialog.addEventListener('close', () => dialog.remove());
    root.append(dialog);
    dialog.showModal();
    typed.focus();
  }

  register('users', { title: 'Users', mount, show });
})();
