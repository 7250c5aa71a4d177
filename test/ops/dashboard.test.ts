/**
 * The Grafana dashboard (deploy/grafana/dashboards) queries only metrics the services export: both
 * services are started in-process, their /metrics scraped, and every PromQL query of the dashboard
 * checked against the names (and, where samples exist, the label names) found there. The monitor gets
 * an SLO with samples, evaluated with dispatch (an alert sent, then one suppressed), so its SLO gauges
 * and counters carry their labels (`slo`, `outcome`).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startMonitorApp, type RunningMonitorApp } from '../support/monitor-app';
import { startNotificationApp, type RunningNotificationApp } from '../support/notification-app';

const DASHBOARD = join(__dirname, '..', '..', 'deploy', 'grafana', 'dashboards', 'notification-monitor.json');

/** Series Prometheus itself attaches to every scrape target, and the labels it adds to every series. */
const PROMETHEUS_SERIES = new Set(['up', 'scrape_duration_seconds', 'scrape_samples_scraped']);
const TARGET_LABELS = new Set(['job', 'instance']);

const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'inf',
  'nan',
]);

/** Metric names a scrape exposes, with the label names seen on each (histograms as _bucket, _sum, _count). */
function exposedMetrics(text: string): Map<string, Set<string>> {
  const metrics = new Map<string, Set<string>>();
  const add = (name: string): Set<string> => {
    if (!metrics.has(name)) metrics.set(name, new Set());
    return metrics.get(name)!;
  };
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)/.exec(line);
    if (type) {
      const [, name, kind] = type;
      if (kind === 'histogram') ['_bucket', '_sum', '_count'].forEach((s) => add(`${name}${s}`));
      else if (kind === 'summary') ['', '_sum', '_count'].forEach((s) => add(`${name}${s}`));
      else add(name!);
      continue;
    }
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s/.exec(line);
    if (sample) {
      const labels = add(sample[1]!);
      for (const m of (sample[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="/g)) labels.add(m[1]!);
    }
  }
  return metrics;
}

/** What a PromQL expression names: metric names, and the label names used with each selector or grouping. */
function queryReferences(expr: string): { metrics: string[]; labels: Map<string, string[]> } {
  const noStrings = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  const labels = new Map<string, string[]>();
  const metrics: string[] = [];
  const grouping: string[] = [];
  for (const m of noStrings.matchAll(/\b(?:by|without|on|ignoring)\s*\(([^)]*)\)/g))
    grouping.push(
      ...m[1]!
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    );
  const stripped = noStrings
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\$\w+/g, ' ');
  const selector = /([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*(\{[^}]*\})?(\s*\()?/g;
  for (const m of stripped.matchAll(selector)) {
    const [whole, name, matchers, call] = m;
    if (!whole || (!name && !matchers)) continue;
    if (name && (call || KEYWORDS.has(name.toLowerCase()) || /^\d/.test(name))) continue;
    if (!name) continue;
    metrics.push(name);
    const used = [...(matchers ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)].map(
      (x) => x[1]!,
    );
    labels.set(name, [
      ...(labels.get(name) ?? []),
      ...used,
      ...grouping.filter((g) => g !== 'le' || name.endsWith('_bucket')),
    ]);
  }
  return { metrics, labels };
}

type Panel = { title: string; type: string; targets?: { expr: string }[]; panels?: Panel[] };
const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { title: string; panels: Panel[] };
const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
const queries = panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));

describe('the Grafana dashboard', () => {
  let notification: RunningNotificationApp;
  let monitor: RunningMonitorApp;
  let exposed: Map<string, Set<string>>;

  beforeAll(async () => {
    notification = await startNotificationApp();
    monitor = await startMonitorApp();
    // Some traffic, so the RPC metrics have samples whose labels can be checked too.
    await notification.inboxConnect.send({ userId: 'u1', title: 'hello', body: 'world' });
    await notification.inboxConnect.getInbox({ userId: 'u1' });
    await monitor.monitorConnect.registerSlo({
      slo: {
        name: 'dashboard-email-p99',
        metric: 'notification_delivery_latency_email_ms',
        percentile: 0.99,
        thresholdMs: 100,
        window: { seconds: 300n },
        tier: 'P0_PAGE',
      },
    });
    await monitor.monitorConnect.recordSloSamples({
      metric: 'notification_delivery_latency_email_ms',
      valuesMs: [50, 80, 400],
    });
    for (let i = 0; i < 2; i++) await monitor.monitorConnect.evaluateSlos({ dispatch: true });
    exposed = new Map();
    for (const app of [notification, monitor]) {
      const res = await fetch(`${app.baseUrl}/metrics`);
      expect(res.status).toBe(200);
      for (const [name, labels] of exposedMetrics(await res.text()))
        exposed.set(name, new Set([...(exposed.get(name) ?? []), ...labels]));
    }
  });

  afterAll(async () => {
    await notification?.close();
    await monitor?.close();
  });

  test('Every query names only metrics that the running services export', () => {
    expect(queries.length).toBeGreaterThan(10);
    const unknown = queries.flatMap((q) =>
      queryReferences(q.expr)
        .metrics.filter((m) => !exposed.has(m) && !PROMETHEUS_SERIES.has(m))
        .map((m) => `${q.panel}: ${m}`),
    );
    expect(unknown).toEqual([]);
    // Every query names at least one metric (a query the parser cannot read is not silently passed).
    for (const q of queries)
      expect({ q: q.expr, n: queryReferences(q.expr).metrics.length > 0 }).toEqual({ q: q.expr, n: true });
  });

  test('Labels the queries filter or group by exist on the metrics that have samples', () => {
    const wrong: string[] = [];
    for (const q of queries) {
      for (const [metric, labels] of queryReferences(q.expr).labels) {
        const seen = exposed.get(metric);
        if (!seen || seen.size === 0) continue; // no samples in this run: names only
        for (const l of labels)
          if (!seen.has(l) && !TARGET_LABELS.has(l)) wrong.push(`${q.panel}: ${metric} has no label ${l}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  test('The dashboard covers delivery, inbox and SLO', () => {
    const rows = dashboard.panels.filter((p) => p.type === 'row').map((p) => p.title);
    expect(rows).toEqual(expect.arrayContaining(['Delivery', 'Inbox', 'SLO']));
    const all = queries.map((q) => q.expr).join('\n');
    expect(all).toContain('notification_deliveries_total');
    expect(all).toContain('svc.notification.v1.InboxService');
    // The monitor's own view of every SLO, beside the notification's histograms.
    const slo = panels
      .filter((p) => (p.targets ?? []).some((t) => /\bslo_/.test(t.expr)))
      .map((p) => p.title);
    expect(slo.length).toBeGreaterThanOrEqual(3);
    for (const metric of ['slo_burn_rate', 'slo_error_budget_remaining', 'slo_alerts_total']) {
      expect(all).toContain(metric);
      // Checked with samples, so its labels were checked too.
      expect(exposed.get(metric)?.size).toBeGreaterThan(0);
    }
  });

  test('The query checker itself flags a metric that does not exist and a label that is not there', () => {
    const refs = queryReferences(
      'sum by (channel, nope) (rate(no_such_metric_total{channel="email"}[5m])) / on(job) up',
    );
    expect(refs.metrics).toEqual(['no_such_metric_total', 'up']);
    expect(refs.labels.get('no_such_metric_total')).toEqual(['channel', 'channel', 'nope', 'job']);
    expect(exposed.has('no_such_metric_total')).toBe(false);
    expect(
      queryReferences('histogram_quantile(0.99, sum by (le) (rate(x_seconds_bucket[1h])))').metrics,
    ).toEqual(['x_seconds_bucket']);
  });
});
