/**
 * `/metrics` rendering: Prometheus text format 0.0.4 by default, OpenMetrics 1.0 when the scraper's
 * `Accept` header prefers it. prom-client renders the text; the OpenMetrics form is derived from it
 * rather than by switching the registry's content type, because prom-client's OpenMetrics mode
 * renames counters in place and so corrupts later 0.0.4 renders of a shared registry.
 */
import type { Registry } from 'prom-client';
import type { PromClientModule } from './prom-loader';

/** Content type of the Prometheus text format. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
/** Content type of OpenMetrics text. */
export const OPENMETRICS_CONTENT_TYPE = 'application/openmetrics-text; version=1.0.0; charset=utf-8';

/** A rendered scrape. */
export interface RenderedMetrics {
  contentType: string;
  body: string;
}

/** True when an `Accept` header prefers OpenMetrics over the plain text format. */
export function wantsOpenMetrics(accept: string | undefined): boolean {
  if (!accept || !accept.includes('openmetrics')) return false;
  let om = -1;
  let text = -1;
  for (const part of accept.split(',')) {
    const [type = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    const qParam = params.find((p) => p.startsWith('q='));
    const q = qParam ? Number(qParam.slice(2)) : 1;
    if (!Number.isFinite(q)) continue;
    if (type === 'application/openmetrics-text') om = Math.max(om, q);
    else if (type === 'text/plain' || type === '*/*' || type === 'text/*') text = Math.max(text, q);
  }
  return om > 0 && om >= text;
}

function unescapeHelp(s: string): string {
  return s.replace(/\\(\\|n)/g, (_m, c: string) => (c === 'n' ? '\n' : '\\'));
}

function escapeOpenMetricsHelp(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

const OM_TYPES: Record<string, string> = {
  counter: 'counter',
  gauge: 'gauge',
  histogram: 'histogram',
  summary: 'summary',
  untyped: 'unknown',
};

/** Converts Prometheus text format 0.0.4 (as prom-client writes it) to OpenMetrics 1.0 text. */
export function toOpenMetrics(text: string): string {
  const out: string[] = [];
  let pendingHelp: { name: string; text: string } | undefined;
  let counterName: string | undefined;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# HELP ')) {
      const rest = line.slice(7);
      const sp = rest.indexOf(' ');
      pendingHelp = sp < 0 ? { name: rest, text: '' } : { name: rest.slice(0, sp), text: rest.slice(sp + 1) };
      continue;
    }
    if (line.startsWith('# TYPE ')) {
      const [name = '', type = 'untyped'] = line.slice(7).split(' ');
      const isCounter = type === 'counter';
      const family = isCounter ? name.replace(/_total$/, '') : name;
      counterName = isCounter ? name : undefined;
      if (pendingHelp && pendingHelp.name === name) {
        out.push(`# HELP ${family} ${escapeOpenMetricsHelp(unescapeHelp(pendingHelp.text))}`);
      }
      pendingHelp = undefined;
      out.push(`# TYPE ${family} ${OM_TYPES[type] ?? 'unknown'}`);
      continue;
    }
    if (line.startsWith('#')) continue;
    if (counterName !== undefined && !counterName.endsWith('_total')) {
      const end = line.search(/[{ ]/);
      const sample = line.slice(0, end);
      if (sample === counterName) {
        out.push(`${sample}_total${line.slice(end)}`);
        continue;
      }
    }
    out.push(line);
  }
  out.push('# EOF');
  return `${out.join('\n')}\n`;
}

/** Renders a registry for a scraper's `Accept` header. */
export async function renderMetrics(
  registry: Registry,
  accept: string | undefined,
): Promise<RenderedMetrics> {
  const text = await registry.metrics();
  if (registry.contentType !== PROMETHEUS_CONTENT_TYPE) {
    return { contentType: registry.contentType, body: text };
  }
  if (wantsOpenMetrics(accept)) return { contentType: OPENMETRICS_CONTENT_TYPE, body: toOpenMetrics(text) };
  return { contentType: PROMETHEUS_CONTENT_TYPE, body: text };
}

/** prom-client default gauges whose names promtool rejects (`_total` on a non-counter). */
const LINT_FAILING_DEFAULTS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

/**
 * Registers prom-client's process metrics on `registry`, minus three `*_total` gauges that fail
 * `promtool check metrics`; their per-type versions (`nodejs_active_handles` and so on) stay.
 * `prefix` and `labels` are the MetricsConfig's `prefix` (joined as is) and `default_labels`.
 */
export function collectProcessMetrics(
  prom: PromClientModule,
  registry: Registry,
  prefix = '',
  labels: Record<string, string> = {},
): void {
  prom.collectDefaultMetrics({ register: registry, prefix, labels });
  for (const name of LINT_FAILING_DEFAULTS) registry.removeSingleMetric(`${prefix}${name}`);
}
