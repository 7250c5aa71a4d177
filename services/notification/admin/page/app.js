/* global PageKit, document, sessionStorage, fetch, AbortController, setTimeout, atob */
// The notification management page. No build step, no dependencies: served as is by AdminGateway.
//
// The bearer token arrives once in the URL fragment (#token=...), is kept in sessionStorage and
// removed from the address bar. Live updates come from /admin/notifications/stream, read with
// fetch() because EventSource cannot send an Authorization header.
//
// The list is reloaded whenever the stream cannot say what changed: on a `reset` event (the events
// after our cursor are no longer kept), and when a stream connects without a cursor after the first
// one. A stream ends with `expired` when the token does: the page then reconnects with a newer token
// from sessionStorage if one was put there, or shows that the session ended.
'use strict';

(function () {
  const API = '/admin/notifications';
  const TOKEN_KEY = 'svc.admin.token';
  const PAGE_SIZE = 20;
  const MAX_BACKOFF_MS = 30000;
  // How long the first page waits for the live stream before loading without it.
  const STREAM_WAIT_MS = 3000;

  const $ = (id) => document.getElementById(id);
  const ui = {
    user: $('user'),
    bell: $('bell'),
    badge: $('badge'),
    summary: $('summary'),
    live: $('live'),
    markAll: $('mark-all'),
    notice: $('notice'),
    list: $('list'),
    empty: $('empty'),
    more: $('more'),
    prefs: $('prefs'),
    prefsBody: $('prefs-body'),
    prefsStatus: $('prefs-status'),
  };
  // The columns of the preferences table, in its header's order.
  const CHANNELS = ['inbox', 'email', 'sms', 'push'];
  const CHANNEL_NAMES = { inbox: 'Inbox', email: 'Email', sms: 'SMS', push: 'Push' };

  const state = {
    token: null,
    items: new Map(), // id -> { message, element }
    nextCursor: null,
    unread: 0,
    lastEventId: null,
    streamAbort: null,
    signedOut: false,
    tokenExpired: false,
    onConnected: () => undefined,
  };

  function subjectOf(token) {
    try {
      const payload = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
      return JSON.parse(atob(payload)).sub || '';
    } catch {
      return '';
    }
  }

  function showNotice(text) {
    ui.notice.textContent = text;
    ui.notice.hidden = !text;
  }

  function signOut(reason) {
    state.signedOut = true;
    sessionStorage.removeItem(TOKEN_KEY);
    if (state.streamAbort) state.streamAbort.abort();
    setLive(false);
    ui.markAll.disabled = true;
    ui.summary.textContent = 'Not signed in';
    showNotice(
      reason +
        ' Open the login link printed by the notification service, or add #token=<JWT> to this address.',
    );
  }

  class ApiError extends Error {}

  async function api(method, path, payload) {
    const headers = { Authorization: 'Bearer ' + state.token, Accept: 'application/json' };
    if (payload !== undefined) headers['Content-Type'] = 'application/json';
    const response = await fetch(API + path, {
      method,
      headers,
      body: payload === undefined ? undefined : JSON.stringify(payload),
      credentials: 'omit',
      cache: 'no-store',
    });
    if (response.status === 401) {
      signOut('Your session is not valid any more.');
      throw new ApiError('unauthenticated');
    }
    const body = await response.json().catch(() => null);
    if (!response.ok) {
      const message = body && body.error ? body.error.message : 'HTTP ' + response.status;
      throw new ApiError(message);
    }
    return body;
  }

  function setUnread(count) {
    state.unread = count;
    ui.badge.textContent = count > 99 ? '99+' : String(count);
    ui.badge.hidden = count === 0;
    ui.bell.setAttribute('aria-label', 'Unread notifications: ' + count);
    ui.markAll.disabled = count === 0 || state.signedOut;
    ui.summary.textContent = count === 0 ? 'All caught up' : count + ' unread';
  }

  function setLive(on) {
    ui.live.dataset.state = on ? 'on' : 'off';
    ui.live.textContent = on ? 'live' : 'offline';
  }

  function formatTime(iso) {
    const date = new Date(iso);
    return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
  }

  function renderItem(message) {
    const li = document.createElement('li');
    li.className = 'item';
    li.dataset.id = message.id;

    const dot = document.createElement('span');
    dot.className = 'dot';
    dot.setAttribute('aria-hidden', 'true');

    const text = document.createElement('div');
    text.className = 'text';
    const title = document.createElement('p');
    title.className = 'title';
    title.textContent = message.title;
    const body = document.createElement('p');
    body.className = 'body';
    body.textContent = message.body;
    const time = document.createElement('time');
    time.dateTime = message.created_at;
    time.textContent = formatTime(message.created_at);
    text.append(title, body, time);

    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'mark-read';
    button.textContent = 'Mark read';
    button.addEventListener('click', () => markRead(message.id, button));

    li.append(dot, text, button);
    return li;
  }

  function applyRead(entry, read) {
    entry.message.read = read;
    entry.element.classList.toggle('unread', !read);
    entry.element.querySelector('.mark-read').hidden = read;
  }

  function addMessage(message, where) {
    const existing = state.items.get(message.id);
    if (existing) {
      applyRead(existing, message.read);
      return;
    }
    const entry = { message, element: renderItem(message) };
    state.items.set(message.id, entry);
    applyRead(entry, message.read);
    if (where === 'top') {
      entry.element.classList.add('fresh');
      ui.list.prepend(entry.element);
    } else {
      ui.list.append(entry.element);
    }
    ui.empty.hidden = true;
  }

  function removeMessage(id) {
    const entry = state.items.get(id);
    if (!entry) return;
    entry.element.remove();
    state.items.delete(id);
    ui.empty.hidden = state.items.size > 0;
  }

  async function loadPage(cursor) {
    let query = '?limit=' + PAGE_SIZE;
    if (cursor) query += '&cursor=' + encodeURIComponent(cursor);
    const page = await api('GET', '/inbox' + query);
    for (const message of page.notifications) addMessage(message, 'bottom');
    state.nextCursor = page.next_cursor;
    ui.more.hidden = !page.next_cursor;
    ui.empty.hidden = state.items.size > 0;
    setUnread(page.unread_count);
  }

  async function reload() {
    state.items.clear();
    ui.list.replaceChildren();
    await loadPage(null);
  }

  async function markRead(id, button) {
    button.disabled = true;
    try {
      const result = await api('POST', '/read/' + encodeURIComponent(id));
      const entry = state.items.get(id);
      if (entry) applyRead(entry, true);
      setUnread(result.unread_count);
    } catch (err) {
      if (!state.signedOut) showNotice('Could not mark the notification read: ' + err.message);
    } finally {
      button.disabled = false;
    }
  }

  async function markAllRead() {
    ui.markAll.disabled = true;
    try {
      const result = await api('POST', '/read-all');
      for (const entry of state.items.values()) applyRead(entry, true);
      setUnread(result.unread_count);
    } catch (err) {
      if (!state.signedOut) showNotice('Could not mark all read: ' + err.message);
      setUnread(state.unread);
    }
  }

  function onEvent(type, data) {
    switch (type) {
      case 'sent':
        if (data.message) addMessage(data.message, 'top');
        break;
      case 'read': {
        const entry = state.items.get(data.message_id);
        if (entry) applyRead(entry, true);
        break;
      }
      case 'all_read':
        for (const entry of state.items.values()) applyRead(entry, true);
        break;
      case 'deleted':
        removeMessage(data.message_id);
        break;
      case 'cleared':
        for (const id of [...state.items.keys()]) removeMessage(id);
        break;
      case 'reset':
        // Events after our cursor are gone (retention): the list is reloaded; the stream goes on
        // from the reset's id, which the parser has already taken as the new cursor.
        reload().catch(() => undefined);
        break;
      case 'expired':
        // The server ends the stream now; runStream decides what comes next.
        state.tokenExpired = true;
        return;
      case 'error':
        // The server refused our resume point: start over from a fresh list.
        state.lastEventId = null;
        reload().catch(() => undefined);
        return;
      default:
        return;
    }
    if (typeof data.unread_count === 'number') setUnread(data.unread_count);
  }

  // After an `expired` event: a newer token in sessionStorage (put there by whoever signs the user
  // in) continues the session; without one, the session has ended.
  function takeFreshToken() {
    const stored = sessionStorage.getItem(TOKEN_KEY);
    if (stored && stored !== state.token) {
      state.token = stored;
      state.tokenExpired = false;
      return true;
    }
    signOut('Your session has ended.');
    return false;
  }

  async function runStream() {
    let backoff = 1000;
    let connections = 0;
    while (!state.signedOut) {
      const controller = new AbortController();
      state.streamAbort = controller;
      let retryAfterMs = 0;
      try {
        const headers = { Authorization: 'Bearer ' + state.token, Accept: 'text/event-stream' };
        const resuming = Boolean(state.lastEventId);
        if (resuming) headers['Last-Event-ID'] = state.lastEventId;
        const response = await fetch(API + '/stream', {
          headers,
          credentials: 'omit',
          cache: 'no-store',
          signal: controller.signal,
        });
        if (response.status === 401) {
          signOut('Your session is not valid any more.');
          return;
        }
        if (response.status === 400 && resuming) {
          // The resume point was refused: start over from a fresh list and a fresh stream.
          state.lastEventId = null;
          reload().catch(() => undefined);
          continue;
        }
        if (response.status === 429) {
          retryAfterMs = (Number(response.headers.get('Retry-After')) || 5) * 1000;
          showNotice('Too many open live views; retrying shortly.');
        }
        if (response.ok && response.body) {
          backoff = 1000;
          connections++;
          // A reconnect without a cursor cannot replay what we missed: reload once it is live.
          const reloadWhenLive = connections > 1 && !resuming;
          const onConnected = state.onConnected;
          state.onConnected = () => {
            onConnected();
            if (reloadWhenLive) reload().catch(() => undefined);
          };
          try {
            await PageKit.readEventStream(response, {
              onEvent,
              onId(id) {
                state.lastEventId = id;
              },
              onComment(text) {
                if (text === ': connected') state.onConnected(); // the server's watch is live
              },
            });
          } finally {
            state.onConnected = onConnected;
          }
        }
      } catch {
        // Network drop or abort: fall through to the reconnect below.
      }
      setLive(false);
      if (state.signedOut) return;
      if (state.tokenExpired) {
        if (!takeFreshToken()) return;
        continue;
      }
      await PageKit.sleep(PageKit.reconnectDelay(retryAfterMs, backoff));
      backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
    }
  }

  // Preferences: one switch per category and channel; a required category's switches are on and
  // disabled. A change is saved at once (PUT); on failure the switch goes back and says why.
  function renderPreferences(body) {
    const rows = body.categories.map((category) => {
      const tr = document.createElement('tr');
      tr.dataset.category = category.name;
      const head = document.createElement('th');
      head.scope = 'row';
      const name = document.createElement('span');
      name.className = 'pref-name';
      name.textContent = category.name;
      head.append(name);
      if (category.required) {
        const mark = document.createElement('span');
        mark.className = 'required';
        mark.textContent = 'Required';
        head.append(' ', mark);
      }
      if (category.description) {
        const description = document.createElement('span');
        description.className = 'pref-description';
        description.textContent = category.description;
        head.append(description);
      }
      tr.append(head);
      for (const channel of CHANNELS) {
        const td = document.createElement('td');
        const pref = category.channels.find((c) => c.channel === channel);
        if (!pref) {
          td.className = 'unused';
          td.textContent = '—';
          td.title = category.name + ' does not use ' + CHANNEL_NAMES[channel];
        } else {
          const input = document.createElement('input');
          input.type = 'checkbox';
          input.setAttribute('role', 'switch');
          input.dataset.category = category.name;
          input.dataset.channel = channel;
          input.checked = pref.enabled;
          input.disabled = category.required;
          input.setAttribute(
            'aria-label',
            category.name + ' by ' + CHANNEL_NAMES[channel] + (category.required ? ' (required)' : ''),
          );
          input.addEventListener('change', () => savePreference(input));
          td.append(input);
        }
        tr.append(td);
      }
      return tr;
    });
    ui.prefsBody.replaceChildren(...rows);
    ui.prefs.hidden = rows.length === 0;
    ui.prefsStatus.textContent = rows.length === 0 ? 'No notification categories are configured.' : '';
  }

  async function loadPreferences() {
    try {
      renderPreferences(await api('GET', '/preferences'));
    } catch (err) {
      if (!state.signedOut) ui.prefsStatus.textContent = 'Could not load preferences: ' + err.message;
    }
  }

  async function savePreference(input) {
    const enabled = input.checked;
    input.disabled = true;
    ui.prefsStatus.textContent = 'Saving…';
    try {
      const body = await api('PUT', '/preferences', {
        preferences: [{ category: input.dataset.category, channel: input.dataset.channel, enabled }],
      });
      renderPreferences(body);
      ui.prefsStatus.textContent = 'Saved.';
    } catch (err) {
      input.checked = !enabled;
      input.disabled = false;
      if (!state.signedOut) ui.prefsStatus.textContent = 'Could not save: ' + err.message;
    }
  }

  function start() {
    ui.markAll.addEventListener('click', markAllRead);
    ui.more.addEventListener('click', async () => {
      ui.more.disabled = true;
      try {
        await loadPage(state.nextCursor);
      } catch (err) {
        if (!state.signedOut) showNotice('Could not load more: ' + err.message);
      } finally {
        ui.more.disabled = false;
      }
    });
    ui.bell.addEventListener('click', () => {
      const firstUnread = ui.list.querySelector('.item.unread');
      (firstUnread || ui.list).scrollIntoView({ behavior: 'smooth', block: 'center' });
    });

    state.token = PageKit.takeToken(TOKEN_KEY);
    if (!state.token) {
      signOut('You are not signed in.');
      return;
    }
    ui.user.textContent = subjectOf(state.token);
    loadPreferences();
    // The first page loads once the stream is live (the server says `: connected` when its watch is
    // registered), so nothing sent in between is missed; ids dedupe. Without a stream, load anyway.
    let firstLoad = true;
    const loadFirst = () => {
      if (!firstLoad) return;
      firstLoad = false;
      loadPage(null).catch((err) => {
        if (!state.signedOut) showNotice('Could not load notifications: ' + err.message);
      });
    };
    state.onConnected = () => {
      setLive(true);
      loadFirst();
    };
    setTimeout(loadFirst, STREAM_WAIT_MS);
    runStream();
  }

  start();
})();
