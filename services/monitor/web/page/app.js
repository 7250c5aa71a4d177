/* global PageKit, document, sessionStorage, fetch, TextDecoderStream */
// The monitor's status page. No build step, no dependencies: served as is by StatusPage.
//
// Everything comes from one stream, /status/events: a `snapshot` event with the whole state (on
// every connect, so a reconnect never needs a replay), then `targets`, `slos` and `alert` events.
// It is read with fetch() because EventSource cannot send an Authorization header. A bearer token,
// when the monitor asks for one, arrives once in the URL fragment (#token=...), is kept in
// sessionStorage and removed from the address bar. Every text from the server is set with
// textContent, never parsed as HTML: alert titles come from remote callers.
'use strict';

(function () {
  const EVENTS = '/status/events';
  const TOKEN_KEY = 'svc.monitor.token';
  const MAX_ALERTS = 500;
  const MAX_BACKOFF_MS = 30000;

  const $ = (id) => document.getElementById(id);
  const ui = {
    live: $('live'),
    notice: $('notice'),
    targets: $('targets'),
    targetsBody: $('targets-body'),
    targetsEmpty: $('targets-empty'),
    targetsSummary: $('targets-summary'),
    slos: $('slos'),
    slosBody: $('slos-body'),
    slosEmpty: $('slos-empty'),
    slosSummary: $('slos-summary'),
    alerts: $('alerts'),
    alertsEmpty: $('alerts-empty'),
    alertsSummary: $('alerts-summary'),
  };

  const state = { token: null, alertIds: new Set(), alertLimit: MAX_ALERTS, stopped: false };

  function showNotice(text) {
    ui.notice.textContent = text;
    ui.notice.hidden = !text;
  }

  function setLive(on) {
    ui.live.dataset.state = on ? 'on' : 'off';
    ui.live.textContent = on ? 'live' : 'offline';
  }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function formatTime(iso) {
    if (!iso) return '—';
    const date = new Date(iso);
    return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
  }

  function formatMs(ms) {
    return typeof ms === 'number' ? ms.toFixed(ms < 10 ? 1 : 0) + ' ms' : '—';
  }

  function formatPercent(fraction) {
    return typeof fraction === 'number' ? (fraction * 100).toFixed(1) + ' %' : '—';
  }

  function renderTargets(targets) {
    const rows = targets.map((t) => {
      const tr = el('tr');
      tr.dataset.target = t.name;
      tr.dataset.state = t.state;
      const badge = el('span', 'state', t.state);
      badge.dataset.state = t.state;
      const stateCell = el('td');
      stateCell.append(badge);
      const where = [t.grpc_address, t.http_url].filter(Boolean).join(' · ');
      const name = el('td');
      name.append(el('strong', 'name', t.name), el('div', 'summary', where));
      tr.append(
        name,
        stateCell,
        el('td', '', formatMs(t.last_latency_ms)),
        el('td', '', formatTime(t.last_probe_at)),
        el('td', '', t.consecutive_failures),
        el('td', 'error', t.last_error || '—'),
      );
      return tr;
    });
    ui.targetsBody.replaceChildren(...rows);
    ui.targets.hidden = targets.length === 0;
    ui.targetsEmpty.hidden = targets.length > 0;
    const down = targets.filter((t) => t.state === 'down').length;
    ui.targetsSummary.textContent =
      targets.length === 0 ? '' : down === 0 ? 'All reachable' : down + ' of ' + targets.length + ' down';
  }

  function renderSlos(slos) {
    const rows = slos.map((s) => {
      const tr = el('tr');
      tr.dataset.slo = s.name;
      const burning = typeof s.burn_rate === 'number' && s.burn_rate >= 1;
      const badge = el('span', 'state', typeof s.burn_rate === 'number' ? s.burn_rate.toFixed(2) : '—');
      badge.dataset.state = s.burn_rate === null ? 'unknown' : burning ? 'burning' : 'ok';
      const burn = el('td', 'burn-rate');
      burn.append(badge);
      const name = el('td');
      name.append(el('strong', 'name', s.name), el('div', 'summary', s.metric + ' · ' + s.tier));
      const objective = 'p' + +(s.percentile * 100).toFixed(3) + ' ≤ ' + formatMs(s.threshold_ms);
      tr.append(
        name,
        el('td', '', objective + ' over ' + s.window_seconds + ' s'),
        el('td', 'measured', formatMs(s.measured_ms)),
        burn,
        el('td', 'budget', formatPercent(s.budget_remaining)),
        el('td', '', s.samples),
      );
      return tr;
    });
    ui.slosBody.replaceChildren(...rows);
    ui.slos.hidden = slos.length === 0;
    ui.slosEmpty.hidden = slos.length > 0;
    const burning = slos.filter((s) => typeof s.burn_rate === 'number' && s.burn_rate >= 1).length;
    ui.slosSummary.textContent =
      slos.length === 0 ? '' : burning === 0 ? 'Within objective' : burning + ' burning';
  }

  function renderAlert(alert) {
    const li = el('li', 'alert');
    li.dataset.id = alert.id;
    const head = el('div', 'head');
    const severity = el('span', 'severity', alert.severity || 'unknown');
    severity.dataset.level = String(alert.severity || '').toLowerCase();
    head.append(severity, el('p', 'title', alert.title || alert.alert_name));
    li.append(head);
    if (alert.message) li.append(el('p', 'message', alert.message));
    const meta = [alert.source_service, alert.kind, formatTime(alert.fired_at)].filter(Boolean).join(' · ');
    li.append(el('time', 'meta', meta));
    return li;
  }

  function updateAlertsSummary() {
    const count = state.alertIds.size;
    ui.alertsEmpty.hidden = count > 0;
    ui.alertsSummary.textContent = count === 0 ? '' : count === 1 ? '1 shown' : count + ' shown';
  }

  function renderAlerts(alerts) {
    state.alertIds = new Set(alerts.map((a) => a.id));
    ui.alerts.replaceChildren(...alerts.map(renderAlert));
    updateAlertsSummary();
  }

  function addAlert(alert) {
    if (state.alertIds.has(alert.id)) return;
    state.alertIds.add(alert.id);
    const li = renderAlert(alert);
    li.classList.add('fresh');
    ui.alerts.prepend(li);
    // The page keeps as many alerts as a snapshot holds: the oldest go.
    while (ui.alerts.children.length > state.alertLimit) {
      const last = ui.alerts.lastElementChild;
      state.alertIds.delete(last.dataset.id);
      last.remove();
    }
    updateAlertsSummary();
  }

  function onEvent(type, data) {
    switch (type) {
      case 'snapshot':
        renderTargets(data.targets);
        renderSlos(data.slos);
        state.alertLimit = Math.max(data.alert_limit || 0, data.alerts.length, 1);
        renderAlerts(data.alerts);
        setLive(true);
        showNotice('');
        break;
      case 'targets':
        renderTargets(data.targets);
        break;
      case 'slos':
        renderSlos(data.slos);
        break;
      case 'alert':
        addAlert(data.alert);
        break;
      default:
        break;
    }
  }

  async function runStream() {
    let backoff = 1000;
    while (!state.stopped) {
      let retryAfterMs = 0;
      try {
        const headers = { Accept: 'text/event-stream' };
        if (state.token) headers.Authorization = 'Bearer ' + state.token;
        const response = await fetch(EVENTS, {
          headers,
          credentials: 'omit',
          cache: 'no-store',
        });
        if (response.status === 401) {
          state.stopped = true;
          sessionStorage.removeItem(TOKEN_KEY);
          showNotice(
            (state.token ? 'This token is not accepted. ' : 'This monitor needs a token. ') +
              'Add #token=<token> to this address (a token from web.api_tokens or server.api_tokens).',
          );
          ui.targetsSummary.textContent = 'Not signed in';
          break;
        }
        if (response.status === 429) {
          retryAfterMs = (Number(response.headers.get('Retry-After')) || 5) * 1000;
          showNotice('Too many open live views; retrying shortly.');
        }
        if (response.ok && response.body) {
          backoff = 1000;
          const push = PageKit.createSseParser({
            dispatch(type, raw) {
              let data;
              try {
                data = JSON.parse(raw);
              } catch {
                return;
              }
              onEvent(type, data);
            },
          });
          const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            push(value);
          }
        }
      } catch {
        // Network drop: fall through to the reconnect below.
      }
      setLive(false);
      if (state.stopped) break;
      await PageKit.sleep(PageKit.reconnectDelay(retryAfterMs, backoff));
      backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
    }
  }

  state.token = PageKit.takeToken(TOKEN_KEY);
  runStream();
})();
