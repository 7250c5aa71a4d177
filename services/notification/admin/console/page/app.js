/* global PageKit, window, document, location, fetch */
// The operator console's shell (services/notification/admin/console). No build step, no
// dependencies. It defines one global, `ConsoleKit`, which each section's script (activity.js,
// suppressions.js, templates.js, users.js, backends.js, loaded after this one) uses to register
// itself; the shell then asks the server which sections exist (`GET api/sections`, which also
// proves the token names an operator), draws a tab per section and routes `#/<section>/<rest...>`
// to it.
//
// The bearer token arrives once in the URL fragment (#token=...), is kept in sessionStorage and
// taken out of the address bar (PageKit.takeToken). Every text from the server goes into the page
// with textContent (ConsoleKit.el), never as HTML.
'use strict';

(function () {
  const API = '/admin/console/api/';
  const TOKEN_KEY = 'svc.console.token';
  const registered = new Map(); // name -> { title, mount, show, element, mounted }
  const order = [];
  let token = null;
  let current = null;

  const $ = (id) => document.getElementById(id);

  /**
   * An error answer of the console API: `code` is the JSON error body's code, `status` the HTTP
   * status, `details` the body's other fields (a template error's `field`, `line`, `column`).
   */
  class ApiError extends Error {
    constructor(status, code, message, details) {
      super(message);
      this.status = status;
      this.code = code;
      this.details = details || {};
    }
  }

  function apiError(response, body) {
    const error = (body && body.error) || {};
    const { code, message, ...details } = error;
    return new ApiError(response.status, code || 'unknown', message || response.statusText, details);
  }

  /**
   * Calls `api/<path>`: `options.method` (GET), `options.body` (sent as JSON), `options.signal`.
   * Resolves to the JSON answer; rejects with an ApiError carrying the server's message.
   */
  async function api(path, options) {
    const opts = options || {};
    const headers = { Authorization: 'Bearer ' + token };
    if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
    const response = await fetch(API + path, {
      method: opts.method || 'GET',
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal: opts.signal,
    });
    let json;
    try {
      json = await response.json();
    } catch {
      json = null;
    }
    if (!response.ok) throw apiError(response, json);
    return json;
  }

  /**
   * Reads the server-sent events of `api/<path>` until `signal` aborts or the stream ends; calls
   * `onEvent(type, data)` for each event with JSON data and `onOpen()` once the response started.
   * Resolves when the stream ends (the caller decides whether to reconnect).
   */
  async function stream(path, handlers, signal) {
    const response = await fetch(API + path, {
      headers: { Authorization: 'Bearer ' + token, Accept: 'text/event-stream' },
      signal,
    });
    if (!response.ok || !response.body) {
      let body;
      try {
        body = await response.json();
      } catch {
        body = null;
      }
      throw apiError(response, body);
    }
    if (handlers.onOpen) handlers.onOpen();
    await PageKit.readEventStream(response, { onEvent: handlers.onEvent, onComment: handlers.onComment });
  }

  /**
   * Makes an element: `attrs` are attributes (`class`, `data-*`, `aria-*`, ...; `text` sets
   * textContent; functions under `on<event>` become listeners); children are nodes or strings (as text).
   */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'text') node.textContent = String(value);
      else if (key.startsWith('on') && typeof value === 'function')
        node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? '' : String(value));
    }
    for (const child of children) {
      if (child === undefined || child === null || child === false) continue;
      node.append(typeof child === 'string' ? document.createTextNode(child) : child);
    }
    return node;
  }

  const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'short', timeStyle: 'medium' });
  /** An ISO time as the operator's local date and time (empty for none). */
  function formatTime(iso) {
    if (!iso) return '';
    const date = new Date(iso);
    return Number.isNaN(date.getTime()) ? String(iso) : timeFormat.format(date);
  }

  /** Shows `text` in the notice line (empty hides it); `kind` 'error' marks it as one. */
  function notice(text, kind) {
    const box = $('notice');
    box.textContent = text || '';
    box.hidden = !text;
    if (kind) box.dataset.kind = kind;
    else delete box.dataset.kind;
  }

  /** Goes to `#/<section>/<rest...>` (segments are URI-encoded here). */
  function navigate(section, ...rest) {
    location.hash = '#/' + [section, ...rest].map((s) => encodeURIComponent(s)).join('/');
  }

  /**
   * Registers a section: `title` for its tab, `mount(container)` once when first shown, and
   * `show(rest)` every time the route names it (`rest`: the decoded segments after its name).
   */
  function register(name, section) {
    registered.set(name, { ...section, element: null, mounted: false });
  }

  function route() {
    const parts = location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
    const name = parts.length > 0 && order.includes(parts[0]) ? parts[0] : order[0];
    if (!name) return;
    const section = registered.get(name);
    for (const other of order) {
      const s = registered.get(other);
      if (s.element) s.element.hidden = other !== name;
      const tab = $('tab-' + other);
      if (other === name) tab.setAttribute('aria-current', 'page');
      else tab.removeAttribute('aria-current');
    }
    if (!section.mounted) {
      section.element = el('section', {
        class: 'section',
        id: 'section-' + name,
        'aria-label': section.title,
      });
      $('sections').append(section.element);
      section.mount(section.element);
      section.mounted = true;
    }
    section.element.hidden = false;
    current = name;
    section.show(parts.slice(1));
  }

  async function boot() {
    token = PageKit.takeToken(TOKEN_KEY);
    if (!token) {
      notice('Sign in: open this page with a link that carries an operator token (#token=...).', 'error');
      return;
    }
    let answer;
    try {
      answer = await api('sections');
    } catch (err) {
      const text =
        err.status === 403
          ? 'This token is not an operator’s: the console is for operators.'
          : err.status === 401
            ? 'The token is not valid (or has expired): sign in again.'
            : 'The console cannot be loaded: ' + err.message;
      notice(text, 'error');
      return;
    }
    $('operator').textContent = answer.operator;
    for (const name of answer.sections) {
      const section = registered.get(name);
      if (!section) continue;
      order.push(name);
      $('tabs').append(el('a', { id: 'tab-' + name, href: '#/' + name, text: section.title }));
    }
    window.addEventListener('hashchange', route);
    route();
  }

  window.ConsoleKit = Object.freeze({
    api,
    stream,
    el,
    formatTime,
    notice,
    navigate,
    register,
    ApiError,
    /** The section shown now. */
    current: () => current,
  });

  document.addEventListener('DOMContentLoaded', () => void boot());
})();
