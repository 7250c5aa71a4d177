/* global window, location, history, sessionStorage, setTimeout, TextDecoderStream */
// The helpers every page of the services shares (the admin page and the monitor's status page),
// served by each page as `<its path>/assets/kit.js` before its own app.js. No build step, no
// dependencies; it defines one global, `PageKit`.
'use strict';

(function () {
  // The bearer token arrives once in the URL fragment (#token=...): keep it in sessionStorage and
  // take it out of the address bar, so it is neither bookmarked nor sent in a Referer.
  function takeToken(storageKey) {
    const match = /(?:^|&)token=([^&]+)/.exec(location.hash.slice(1));
    if (match) {
      sessionStorage.setItem(storageKey, decodeURIComponent(match[1]));
      history.replaceState(null, '', location.pathname + location.search);
    }
    return sessionStorage.getItem(storageKey);
  }

  // Parses the text/event-stream format (https://html.spec.whatwg.org/#event-stream-interpretation)
  // from text chunks. `dispatch(type, data)` gets each event with data; `onId(id)` each completed
  // block's id (also a block without data, which moves the last event id without an event);
  // `onComment(text)` each comment line (heartbeats, the admin stream's `: connected`).
  function createSseParser(handlers) {
    const dispatch = handlers.dispatch;
    const onId = handlers.onId || function () {};
    const onComment = handlers.onComment || function () {};
    let buffer = '';
    let id = null;
    let event = '';
    let data = [];
    function line(text) {
      if (text === '') {
        if (id !== null) onId(id);
        if (data.length > 0) dispatch(event || 'message', data.join('\n'));
        id = null;
        event = '';
        data = [];
        return;
      }
      if (text.startsWith(':')) {
        onComment(text);
        return;
      }
      const colon = text.indexOf(':');
      const field = colon === -1 ? text : text.slice(0, colon);
      let value = colon === -1 ? '' : text.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'id' && !value.includes('\0')) id = value;
      else if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    return function push(chunk) {
      buffer += chunk;
      let newline;
      while ((newline = buffer.indexOf('\n')) !== -1) {
        let text = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        if (text.endsWith('\r')) text = text.slice(0, -1);
        line(text);
      }
    };
  }

  // Reads an event stream's body (a fetch() response: EventSource cannot send an Authorization
  // header) until it ends: `onEvent(type, data)` for each event whose data is JSON (others are
  // skipped), `onId(id)` and `onComment(text)` as createSseParser gives them.
  async function readEventStream(response, handlers) {
    const push = createSseParser({
      dispatch(type, raw) {
        let data;
        try {
          data = JSON.parse(raw);
        } catch {
          return;
        }
        handlers.onEvent(type, data);
      },
      onId: handlers.onId,
      onComment: handlers.onComment,
    });
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      push(value);
    }
  }

  function sleep(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }

  // The wait before reconnecting: what the server asked for (429's Retry-After), else the backoff
  // with up to half a second of jitter, so a restarted server is not hit by every page at once.
  function reconnectDelay(retryAfterMs, backoffMs) {
    return Math.max(retryAfterMs, backoffMs + Math.floor(Math.random() * 500));
  }

  window.PageKit = Object.freeze({ takeToken, createSseParser, readEventStream, sleep, reconnectDelay });
})();
