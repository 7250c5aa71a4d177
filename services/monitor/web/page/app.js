/* global PageKit, CSS, document, sessionStorage, fetch, setTimeout */
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
    groups: $('groups'),
    groupsEmpty: $('groups-empty'),
    groupsSummary: $('groups-summary'),
    actor: $('actor'),
    silenceForm: $('silence-form'),
    silenceMatchers: $('silence-matchers'),
    silenceHours: $('silence-hours'),
    silenceComment: $('silence-comment'),
    silences: $('silences'),
    silencesBody: $('silences-body'),
    silencesEmpty: $('silences-empty'),
    silencesSummary: $('silences-summary'),
    oncall: $('oncall'),
    oncallBody: $('oncall-body'),
    oncallEmpty: $('oncall-empty'),
    oncallSummary: $('oncall-summary'),
    targetCharts: $('target-charts'),
    alertTimeline: $('alert-timeline'),
  };
  const ACTOR_KEY = 'svc.monitor.actor';

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
        lastErrorCell(t),
      );
      return tr;
    });
    ui.targetsBody.replaceChildren(...rows);
    syncTargetCharts(targets);
    ui.targets.hidden = targets.length === 0;
    ui.targetsEmpty.hidden = targets.length > 0;
    const down = targets.filter((t) => t.state === 'down').length;
    ui.targetsSummary.textContent =
      targets.length === 0 ? '' : down === 0 ? 'All reachable' : down + ' of ' + targets.length + ' down';
  }

  /** A burn rate as the rules show it: `14.4×`, `—` without events. */
  function burnText(rate) {
    return typeof rate === 'number' ? +rate.toFixed(2) + '×' : '—';
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
      if (s.ratio) {
        // A ratio SLO (or a latency SLO with a period): its period's budget and each burn-rate rule.
        const firing = s.ratio.rules.filter((r) => r.firing);
        badge.dataset.state = firing.length > 0 ? 'burning' : 'ok';
        badge.textContent = firing.length > 0 ? firing.map((r) => r.name).join(', ') : 'no rule fires';
        name.append(el('strong', 'name', s.name), el('div', 'summary', s.tier));
        const rules = el('ul', 'rules');
        for (const r of s.ratio.rules) {
          const li = el(
            'li',
            r.firing ? 'rule firing' : 'rule',
            r.name +
              ': ' +
              burnText(r.long_burn_rate) +
              ' / ' +
              burnText(r.short_burn_rate) +
              ' (fires at ' +
              r.burn_rate +
              '×)',
          );
          li.dataset.rule = r.name;
          li.dataset.firing = String(r.firing);
          rules.append(li);
        }
        const objectiveCell = el(
          'td',
          '',
          +(s.ratio.target * 100).toFixed(4) + '% good over ' + s.ratio.period,
        );
        objectiveCell.append(rules);
        if (s.ratio.rules.length > 0) objectiveCell.append(burnWindowsChart(s));
        objectiveCell.append(budgetBox(s.name));
        tr.dataset.kind = 'ratio';
        tr.append(
          name,
          objectiveCell,
          el('td', 'measured', s.ratio.bad_events + ' bad of ' + s.ratio.events),
          burn,
          el('td', 'budget', formatPercent(s.budget_remaining)),
          el('td', '', s.ratio.events),
        );
        return tr;
      }
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
    for (const s of slos) if (s.ratio) loadBudget(s.name);
    ui.slos.hidden = slos.length === 0;
    ui.slosEmpty.hidden = slos.length > 0;
    const burning = slos.filter((s) =>
      s.ratio ? s.ratio.rules.some((r) => r.firing) : typeof s.burn_rate === 'number' && s.burn_rate >= 1,
    ).length;
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
    // The same alert again (another trigger of its dedup key, or its resolution): shown anew on top.
    if (state.alertIds.has(alert.id)) {
      for (const old of ui.alerts.children) if (old.dataset.id === alert.id) old.remove();
    }
    state.alertIds.add(alert.id);
    const li = renderAlert(alert);
    if (alert.state) li.dataset.state = alert.state;
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

  // --- charts (issue 29): inline SVG built with createElementNS, every text through textContent ---

  const SVG_NS = 'http://www.w3.org/2000/svg';
  /** A target's history is read again at most this often (probes send `targets` events often). */
  const HISTORY_REFRESH_MS = 60000;
  const charts = { history: new Map(), fetchedAt: new Map(), inflight: new Set() };

  function svgEl(tag, attrs, title) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const key of Object.keys(attrs || {})) node.setAttribute(key, String(attrs[key]));
    if (title) {
      const t = document.createElementNS(SVG_NS, 'title');
      t.textContent = title;
      node.append(t);
    }
    return node;
  }

  function chartSvg(width, height, label, kind) {
    const svg = svgEl('svg', {
      viewBox: '0 0 ' + width + ' ' + height,
      preserveAspectRatio: 'none',
      role: 'img',
      'aria-label': label,
      class: 'chart ' + kind,
    });
    svg.dataset.chart = kind;
    return svg;
  }

  /** Minutes or hours ago, for a past error. */
  function ago(iso) {
    const ms = Date.now() - new Date(iso).getTime();
    if (!(ms >= 0)) return '';
    const min = Math.round(ms / 60000);
    if (min < 60) return min + ' min ago';
    const h = Math.round(min / 60);
    return h < 48 ? h + ' h ago' : Math.round(h / 24) + ' d ago';
  }

  /** The "last error" cell: current, or past once the target is up again. */
  function lastErrorCell(t) {
    if (!t.last_error) return el('td', 'error', '—');
    if (!t.last_error_recovered) return el('td', 'error', t.last_error);
    const cell = el('td', 'error past');
    cell.dataset.recovered = 'true';
    const when = t.last_error_at ? 'last error ' + ago(t.last_error_at) + ', recovered' : 'recovered';
    cell.append(el('span', 'past-note', when), el('div', 'summary', t.last_error));
    return cell;
  }

  function ratioClass(ratio) {
    if (ratio === null || ratio === undefined) return 'none';
    if (ratio >= 0.999) return 'up';
    if (ratio >= 0.95) return 'partial';
    return 'down';
  }

  /** One cell per point, coloured by up ratio, each with a title (time and ratio). */
  function uptimeBar(points, label) {
    const svg = chartSvg(points.length, 10, label, 'uptime');
    points.forEach((p, i) => {
      const ratio = p.up_ratio === null ? 'no probe' : (p.up_ratio * 100).toFixed(2) + ' % up';
      const cell = svgEl(
        'rect',
        { x: i + 0.1, y: 0, width: 0.8, height: 10, class: 'cell ' + ratioClass(p.up_ratio) },
        formatTime(p.start) + ': ' + ratio,
      );
      cell.dataset.point = String(i);
      svg.append(cell);
    });
    return svg;
  }

  /** The average latency of each point with probes as a line, its max as the title. */
  function latencyLine(points, label) {
    const values = points.map((p) => p.latency_avg_ms);
    const max = Math.max(1, ...values.filter((v) => typeof v === 'number'));
    const height = 40;
    const svg = chartSvg(points.length, height, label, 'latency');
    const y = (v) => (height - 2 - (v / max) * (height - 4)).toFixed(2);
    let path = '';
    points.forEach((p, i) => {
      if (typeof p.latency_avg_ms !== 'number') return;
      path += (path ? ' L' : 'M') + (i + 0.5) + ' ' + y(p.latency_avg_ms);
      const dot = svgEl(
        'circle',
        { cx: i + 0.5, cy: y(p.latency_avg_ms), r: 0.6, class: 'dot' },
        formatTime(p.start) +
          ': ' +
          formatMs(p.latency_avg_ms) +
          ' avg, ' +
          formatMs(p.latency_max_ms) +
          ' max',
      );
      dot.dataset.point = String(i);
      svg.append(dot);
    });
    if (path) svg.prepend(svgEl('path', { d: path, class: 'line', 'vector-effect': 'non-scaling-stroke' }));
    return svg;
  }

  function renderTargetCharts(name) {
    const box = ui.targetCharts.querySelector('[data-target-charts="' + CSS.escape(name) + '"]');
    const h = charts.history.get(name);
    if (!box || !h) return;
    const parts = [];
    for (const range of ['24h', '30d']) {
      const data = h[range];
      if (!data) continue;
      const label = name + ': uptime over the last ' + (range === '24h' ? '24 hours' : '30 days');
      const known = data.points.filter((p) => p.up_ratio !== null);
      const up = known.length
        ? known.reduce((s, p) => s + p.up_ratio * p.probes, 0) / known.reduce((s, p) => s + p.probes, 0)
        : null;
      const row = el('div', 'chart-row');
      row.dataset.range = range;
      row.append(
        el('span', 'chart-label', range + ' ' + (up === null ? '—' : (up * 100).toFixed(2) + ' %')),
        uptimeBar(data.points, label),
      );
      parts.push(row);
    }
    if (h['24h']) {
      const row = el('div', 'chart-row');
      row.dataset.range = 'latency';
      row.append(
        el('span', 'chart-label', 'latency 24h'),
        latencyLine(h['24h'].points, name + ': average probe latency over 24 hours'),
      );
      parts.push(row);
    }
    box.replaceChildren(el('strong', 'name', name), ...parts);
  }

  async function loadHistory(name) {
    if (charts.inflight.has(name)) return;
    const last = charts.fetchedAt.get(name) || 0;
    if (Date.now() - last < HISTORY_REFRESH_MS) return;
    charts.inflight.add(name);
    try {
      const base = '/status/targets/' + encodeURIComponent(name) + '/history?range=';
      const [day, month] = await Promise.all([api('GET', base + '24h'), api('GET', base + '30d')]);
      charts.history.set(name, { '24h': day, '30d': month });
      charts.fetchedAt.set(name, Date.now());
      renderTargetCharts(name);
    } catch {
      // No history (an older monitor, a target just removed): the table still shows the state.
      charts.fetchedAt.set(name, Date.now());
    } finally {
      charts.inflight.delete(name);
    }
  }

  function syncTargetCharts(targets) {
    const names = targets.map((t) => t.name);
    const kept = new Map();
    for (const box of ui.targetCharts.children) kept.set(box.dataset.targetCharts, box);
    const boxes = names.map((name) => {
      let box = kept.get(name);
      if (!box) {
        box = el('div', 'target-charts');
        box.dataset.targetCharts = name;
        box.append(el('strong', 'name', name));
      }
      return box;
    });
    ui.targetCharts.replaceChildren(...boxes);
    ui.targetCharts.hidden = names.length === 0;
    for (const name of names) {
      renderTargetCharts(name);
      loadHistory(name);
    }
  }

  /** Each burn-rate rule's long and short window: a bar of its burn rate and the rule's threshold line. */
  function burnWindowsChart(s) {
    const rules = s.ratio.rules;
    const rates = [];
    for (const r of rules) rates.push(r.burn_rate, r.long_burn_rate || 0, r.short_burn_rate || 0);
    const max = Math.max(1, ...rates) * 1.1;
    const width = 100;
    const rowH = 12;
    const svg = chartSvg(width, rules.length * rowH * 2, s.name + ': burn rate per alert window', 'burn');
    const x = (v) => ((v / max) * width).toFixed(2);
    rules.forEach((r, i) => {
      [
        ['long', r.long_burn_rate, r.long_window_seconds],
        ['short', r.short_burn_rate, r.short_window_seconds],
      ].forEach(([which, rate, seconds], j) => {
        const top = (i * 2 + j) * rowH;
        const over = typeof rate === 'number' && rate >= r.burn_rate;
        const bar = svgEl(
          'rect',
          {
            x: 0,
            y: top + 2,
            width: typeof rate === 'number' ? x(rate) : 0,
            height: rowH - 4,
            class: 'bar ' + (over ? 'over' : 'under'),
          },
          r.name +
            ' ' +
            which +
            ' window (' +
            seconds +
            ' s): ' +
            burnText(rate) +
            ', fires at ' +
            r.burn_rate +
            '×',
        );
        bar.dataset.point = r.name + ':' + which;
        svg.append(bar);
      });
      const threshold = svgEl('line', {
        x1: x(r.burn_rate),
        x2: x(r.burn_rate),
        y1: i * 2 * rowH,
        y2: (i * 2 + 2) * rowH,
        class: 'threshold',
        'vector-effect': 'non-scaling-stroke',
      });
      threshold.dataset.threshold = r.name;
      svg.append(threshold);
    });
    return svg;
  }

  // --- the error-budget burn-down (issue 29, /status/slos/<name>/budget) ---

  /** An SLO's burn-down is read again at most this often (`slos` events come every few seconds). */
  const BUDGET_REFRESH_MS = 60000;
  /** The chart's floor: an overspent budget below -100 % is drawn on the bottom edge (its title says the figure). */
  const BUDGET_FLOOR = -1;
  const budgets = { data: new Map(), fetchedAt: new Map(), inflight: new Set() };

  /** The box of an SLO's burn-down in its row, drawn from the last read (rows are rebuilt on each update). */
  function budgetBox(name) {
    const box = el('div', 'budget-chart');
    box.dataset.sloBudget = name;
    const data = budgets.data.get(name);
    if (data) box.append(budgetChart(data));
    return box;
  }

  function renderBudget(name) {
    const box = ui.slosBody.querySelector('[data-slo-budget="' + CSS.escape(name) + '"]');
    const data = budgets.data.get(name);
    if (box && data) box.replaceChildren(budgetChart(data));
  }

  async function loadBudget(name) {
    if (budgets.inflight.has(name)) return;
    if (Date.now() - (budgets.fetchedAt.get(name) || 0) < BUDGET_REFRESH_MS) return;
    budgets.inflight.add(name);
    try {
      budgets.data.set(name, await api('GET', '/status/slos/' + encodeURIComponent(name) + '/budget'));
      renderBudget(name);
    } catch {
      // No burn-down (an older monitor, an SLO just removed): the row still shows the budget figure.
    } finally {
      budgets.fetchedAt.set(name, Date.now());
      budgets.inflight.delete(name);
    }
  }

  /**
   * The budget left over the period: a line through the points (each a circle with `data-point`),
   * and the target line at 0 (spent). Each point is the budget left of the events so far (bad among
   * them against what the objective allows of them), the figure the row shows: spending at exactly the
   * allowed rate keeps it at 0, so there is no straight "ideal" line from 1 to 0 to be ahead of.
   */
  function budgetChart(b) {
    const width = 200;
    const height = 60;
    const start = new Date(b.period_start).getTime();
    const end = Math.max(start + 1, new Date(b.period_end).getTime());
    const low = Math.max(BUDGET_FLOOR, Math.min(b.target, ...b.points.map((p) => p.budget_remaining)));
    const x = (ms) => (((ms - start) / (end - start)) * width).toFixed(2);
    const y = (v) => (2 + ((1 - Math.max(low, Math.min(1, v))) / (1 - low)) * (height - 4)).toFixed(2);
    const last = b.points.length ? b.points[b.points.length - 1].budget_remaining : 1;
    const svg = chartSvg(
      width,
      height,
      b.slo + ': error budget over ' + b.period + ', ' + formatPercent(last) + ' left',
      'burndown',
    );
    const target = svgEl('line', {
      x1: 0,
      x2: width,
      y1: y(b.target),
      y2: y(b.target),
      class: 'target-line',
      'vector-effect': 'non-scaling-stroke',
    });
    target.dataset.target = String(b.target);
    svg.append(target);
    let path = 'M0 ' + y(1);
    const dots = b.points.map((p, i) => {
      const at = new Date(p.at).getTime();
      path += ' L' + x(at) + ' ' + y(p.budget_remaining);
      const dot = svgEl(
        'circle',
        {
          cx: x(at),
          cy: y(p.budget_remaining),
          r: 0.8,
          class: 'dot' + (p.budget_remaining <= b.target ? ' spent' : ''),
        },
        formatTime(p.at) + ': ' + formatPercent(p.budget_remaining) + ' of the budget left',
      );
      dot.dataset.point = String(i);
      return dot;
    });
    svg.append(svgEl('path', { d: path, class: 'line', 'vector-effect': 'non-scaling-stroke' }), ...dots);
    return svg;
  }

  /** The alerts of the last 24 hours as spans from start to end (or now). */
  function renderAlertTimeline(groups) {
    const now = Date.now();
    const from = now - 86400000;
    const alerts = [];
    for (const g of groups) for (const a of g.alerts) alerts.push(a);
    const shown = alerts
      .filter((a) => a.fired_at && (a.resolved_at === null || new Date(a.resolved_at).getTime() >= from))
      .slice(0, 50);
    const rowH = 6;
    const svg = chartSvg(240, Math.max(1, shown.length) * rowH, 'Alerts over the last 24 hours', 'timeline');
    const x = (ms) => Math.max(0, Math.min(240, ((ms - from) / 86400000) * 240));
    shown.forEach((a, i) => {
      const start = new Date(a.fired_at).getTime();
      const end = a.resolved_at ? new Date(a.resolved_at).getTime() : now;
      const x1 = x(start);
      const span = svgEl(
        'rect',
        {
          x: x1,
          y: i * rowH + 1,
          width: Math.max(0.8, x(end) - x1),
          height: rowH - 2,
          class: 'span ' + (a.resolved_at ? 'resolved' : 'open'),
        },
        a.title +
          ' (' +
          a.severity +
          '): ' +
          formatTime(a.fired_at) +
          ' – ' +
          (a.resolved_at ? formatTime(a.resolved_at) : 'now'),
      );
      span.dataset.point = a.id;
      svg.append(span);
    });
    ui.alertTimeline.replaceChildren(svg);
    ui.alertTimeline.hidden = shown.length === 0;
  }

  // --- on call (issue 28): each schedule, who is on call now (until when) and next (from when) ---

  function renderShift(shift, cellClass, word, when) {
    const cell = el('td', cellClass);
    if (!shift) {
      cell.append(el('span', 'nobody', 'Nobody'));
      return cell;
    }
    cell.dataset.user = shift.user_id;
    // dir=auto: a right-to-left name keeps its own direction inside the left-to-right page.
    const user = el('strong', 'user', shift.user_id);
    user.dir = 'auto';
    cell.append(user);
    if (shift.override) cell.append(' ', el('span', 'override', 'override'));
    cell.append(el('div', 'summary ' + word, word + ' ' + formatTime(when)));
    return cell;
  }

  function renderOnCall(schedules) {
    const rows = schedules.map((s) => {
      const tr = el('tr');
      tr.dataset.schedule = s.schedule;
      const name = el('td');
      name.append(el('strong', 'name', s.schedule), el('div', 'summary', s.time_zone));
      tr.append(
        name,
        renderShift(s.current, 'now', 'until', s.current && s.current.end),
        renderShift(s.next, 'next', 'from', s.next && s.next.start),
      );
      return tr;
    });
    ui.oncallBody.replaceChildren(...rows);
    ui.oncall.hidden = schedules.length === 0;
    ui.oncallEmpty.hidden = schedules.length > 0;
    const uncovered = schedules.filter((s) => !s.current).length;
    ui.oncallSummary.textContent =
      schedules.length === 0 ? '' : uncovered === 0 ? 'All covered' : uncovered + ' with nobody on call';
  }

  // --- the alert lifecycle: groups, timeline, acknowledge, resolve, silences (/status/alerts...) ---

  const lifecycle = { timer: null, open: new Set() };

  function authHeaders(extra) {
    const headers = Object.assign({}, extra);
    if (state.token) headers.Authorization = 'Bearer ' + state.token;
    return headers;
  }

  async function api(method, path, body) {
    const response = await fetch(path, {
      method,
      headers: authHeaders(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'omit',
      cache: 'no-store',
    });
    const data = await response.json().catch(() => null);
    if (!response.ok) {
      const message = data && data.error ? data.error.message : 'HTTP ' + response.status;
      throw new Error(
        response.status === 401 || response.status === 403 ? 'Not allowed: ' + message : message,
      );
    }
    return data;
  }

  function actor() {
    const who = ui.actor.value.trim();
    if (!who) {
      showNotice('Say who you are in "Acting as" first.');
      ui.actor.focus();
      return null;
    }
    sessionStorage.setItem(ACTOR_KEY, who);
    return who;
  }

  async function act(run) {
    try {
      await run();
      showNotice('');
    } catch (err) {
      showNotice(String(err && err.message ? err.message : err));
    }
    await loadLifecycle();
  }

  function button(label, className, onClick) {
    const b = el('button', className, label);
    b.type = 'button';
    b.addEventListener('click', onClick);
    return b;
  }

  function renderTimeline(li, data) {
    const list = el('ol', 'timeline');
    for (const t of data.timeline) {
      const item = el(
        'li',
        '',
        formatTime(t.at) +
          ' · ' +
          t.kind +
          (t.actor ? ' · ' + t.actor : '') +
          (t.detail ? ' · ' + t.detail : ''),
      );
      item.dataset.kind = t.kind;
      list.append(item);
    }
    const old = li.querySelector('.timeline');
    if (old) old.replaceWith(list);
    else li.append(list);
  }

  async function toggleTimeline(li, id) {
    if (lifecycle.open.has(id)) {
      lifecycle.open.delete(id);
      const old = li.querySelector('.timeline');
      if (old) old.remove();
      return;
    }
    lifecycle.open.add(id);
    try {
      renderTimeline(li, await api('GET', '/status/alerts/' + encodeURIComponent(id)));
    } catch (err) {
      showNotice(String(err.message || err));
    }
  }

  function renderLifecycleAlert(a) {
    const li = el('li', 'lc-alert');
    li.dataset.id = a.id;
    li.dataset.state = a.state;
    const head = el('div', 'head');
    const badge = el('span', 'state', a.silenced_by ? 'silenced' : a.inhibited_by ? 'inhibited' : a.state);
    badge.dataset.state = a.silenced_by ? 'silenced' : a.inhibited_by ? 'inhibited' : a.state;
    const severity = el('span', 'severity', a.severity || 'unknown');
    severity.dataset.level = String(a.severity || '').toLowerCase();
    head.append(badge, severity, el('p', 'title', a.title));
    li.append(head);
    if (a.message) li.append(el('p', 'message', a.message));
    const meta = [a.source_service, 'x' + a.count, 'fired ' + formatTime(a.fired_at)];
    if (a.acknowledged_by) meta.push('acknowledged by ' + a.acknowledged_by);
    if (a.resolved_by) meta.push('resolved by ' + a.resolved_by);
    li.append(el('p', 'meta', meta.join(' · ')));
    const actions = el('div', 'actions');
    if (a.state === 'triggered')
      actions.append(
        button('Acknowledge', 'ack', () => {
          const by = actor();
          if (by)
            act(() => api('POST', '/status/alerts/' + encodeURIComponent(a.id) + '/acknowledge', { by }));
        }),
      );
    if (a.state !== 'resolved')
      actions.append(
        button('Resolve', 'resolve', () => {
          const by = actor();
          if (by) act(() => api('POST', '/status/alerts/' + encodeURIComponent(a.id) + '/resolve', { by }));
        }),
      );
    actions.append(button('Timeline', 'show-timeline', () => toggleTimeline(li, a.id)));
    li.append(actions);
    if (lifecycle.open.has(a.id))
      api('GET', '/status/alerts/' + encodeURIComponent(a.id))
        .then((d) => renderTimeline(li, d))
        .catch(() => undefined);
    return li;
  }

  function renderGroups(groups) {
    const nodes = groups.map((g) => {
      const box = el('div', 'group');
      box.dataset.group = g.name;
      const h = el('h3', '', g.name);
      h.append(el('span', 'count', ' ' + g.open + ' open of ' + g.alerts.length));
      const list = el('ul', 'list');
      list.append(...g.alerts.map(renderLifecycleAlert));
      box.append(h, list);
      return box;
    });
    ui.groups.replaceChildren(...nodes);
    ui.groupsEmpty.hidden = groups.length > 0;
    const open = groups.reduce((n, g) => n + g.open, 0);
    ui.groupsSummary.textContent = groups.length === 0 ? '' : open + ' open';
  }

  function renderSilences(silences) {
    const rows = silences.map((s) => {
      const tr = el('tr');
      tr.dataset.silence = s.id;
      tr.dataset.state = s.state;
      const badge = el('span', 'state', s.state);
      badge.dataset.state = s.state;
      const stateCell = el('td');
      stateCell.append(badge);
      const actions = el('td');
      if (s.state !== 'expired')
        actions.append(
          button('Expire', 'expire', () =>
            act(() => api('POST', '/status/silences/' + encodeURIComponent(s.id) + '/expire')),
          ),
        );
      tr.append(
        el('td', 'matchers', s.matchers.join(', ')),
        stateCell,
        el('td', '', formatTime(s.ends_at)),
        el('td', '', s.created_by),
        el('td', 'comment', s.comment || '—'),
        actions,
      );
      return tr;
    });
    ui.silencesBody.replaceChildren(...rows);
    ui.silences.hidden = silences.length === 0;
    ui.silencesEmpty.hidden = silences.length > 0;
    const active = silences.filter((s) => s.state === 'active').length;
    ui.silencesSummary.textContent = silences.length === 0 ? '' : active + ' active';
  }

  async function loadLifecycle() {
    try {
      const data = await api('GET', '/status/alerts.json');
      renderGroups(data.groups);
      renderAlertTimeline(data.groups);
      renderSilences(data.silences);
      loadEscalations();
    } catch (err) {
      showNotice(String(err.message || err));
    }
  }

  // --- on-call escalation (issue 28, O2b): /status/escalations.json, enabled: false when none is configured ---

  const escalationUi = {
    section: document.getElementById('escalations-section'),
    list: document.getElementById('escalations'),
    empty: document.getElementById('escalations-empty'),
    summary: document.getElementById('escalations-summary'),
  };

  function renderEscalation(e) {
    const li = el('li', 'escalation');
    li.dataset.alertId = e.alert_id;
    const head = el('div', 'alert-head');
    head.append(el('span', 'badge sev-' + e.severity, e.severity), el('strong', 'title', e.title));
    li.append(head);
    const where =
      'policy ' +
      e.policy +
      ' · ' +
      e.status +
      (e.reason ? ' (' + e.reason + ')' : '') +
      ' · step ' +
      e.step +
      '/' +
      e.steps +
      (e.rounds > 1 ? ', round ' + e.round + '/' + e.rounds : '');
    li.append(el('p', 'meta escalation-where', where));
    if (e.next_step_at) {
      const next = e.next
        ? 'step ' + e.next.step + (e.next.round !== e.round ? ' (round ' + e.next.round + ')' : '')
        : 'end';
      li.append(el('p', 'meta escalation-next', 'next: ' + next + ' at ' + formatTime(e.next_step_at)));
    }
    if (e.acknowledged_by) {
      li.append(
        el(
          'p',
          'meta escalation-ack',
          'acknowledged by ' + e.acknowledged_by + (e.acknowledged_how ? ' via ' + e.acknowledged_how : ''),
        ),
      );
    }
    const pages = el('ul', 'escalation-pages');
    for (const p of e.pages) {
      const line =
        'step ' +
        p.step +
        (p.round > 1 ? ' (round ' + p.round + ')' : '') +
        ': ' +
        p.user_id +
        ' — ' +
        (p.error ? 'failed (' + p.error + ')' : p.channels.join(', ') || 'no channel') +
        ' · ' +
        formatTime(p.at);
      const item = el('li', 'escalation-page', line);
      item.dataset.user = p.user_id;
      pages.append(item);
    }
    li.append(pages);
    return li;
  }

  async function loadEscalations() {
    const response = await fetch('/status/escalations.json', {
      headers: authHeaders({}),
      credentials: 'omit',
      cache: 'no-store',
    }).catch(() => null);
    if (!response || !response.ok) return; // keeps the last view; the alerts' own load reports errors
    const data = await response.json().catch(() => null);
    if (!data || !Array.isArray(data.escalations)) return;
    if (!data.enabled) {
      escalationUi.section.hidden = true;
      return;
    }
    escalationUi.section.hidden = false;
    escalationUi.list.replaceChildren(...data.escalations.map(renderEscalation));
    escalationUi.empty.hidden = data.escalations.length > 0;
    const active = data.escalations.filter((e) => e.status === 'active').length;
    escalationUi.summary.textContent = data.escalations.length === 0 ? '' : active + ' active';
  }

  function scheduleLifecycle() {
    if (lifecycle.timer) return;
    lifecycle.timer = setTimeout(() => {
      lifecycle.timer = null;
      loadLifecycle();
    }, 200);
  }

  ui.actor.value = sessionStorage.getItem(ACTOR_KEY) || '';
  ui.silenceForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const by = actor();
    if (!by) return;
    const matchers = ui.silenceMatchers.value
      .split('\n')
      .map((m) => m.trim())
      .filter(Boolean);
    const hours = Number(ui.silenceHours.value);
    const endsAt = new Date(Date.now() + hours * 3600 * 1000).toISOString();
    act(async () => {
      await api('POST', '/status/silences', {
        matchers,
        ends_at: endsAt,
        created_by: by,
        comment: ui.silenceComment.value,
      });
      ui.silenceMatchers.value = '';
      ui.silenceComment.value = '';
    });
  });

  function onEvent(type, data) {
    switch (type) {
      case 'snapshot':
        renderTargets(data.targets);
        renderSlos(data.slos);
        state.alertLimit = Math.max(data.alert_limit || 0, data.alerts.length, 1);
        renderAlerts(data.alerts);
        renderOnCall(data.oncall || []);
        setLive(true);
        showNotice('');
        scheduleLifecycle();
        break;
      case 'targets':
        renderTargets(data.targets);
        break;
      case 'slos':
        renderSlos(data.slos);
        break;
      case 'oncall':
        renderOnCall(data.oncall);
        break;
      case 'alert':
        addAlert(data.alert);
        scheduleLifecycle();
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
          await PageKit.readEventStream(response, { onEvent });
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
