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

/**
 * Converts Prometheus text format 0.0.4 (as prom-client writes it) to OpenMetrics 1.0 text, a chunk
 * at a time: `push` takes any piece of the text (a line may be split across pieces) and returns the
 * converted whole lines; `end` returns the rest and `# EOF`.
 */
export class OpenMetricsConverter {
  private pendingHelp: { name: string; text: string } | undefined;
  private counterName: string | undefined;
  private partial = '';

  /** Converts the whole lines of `text` (with what was left of the previous piece). */
  push(text: string): string {
    const all = this.partial + text;
    const last = all.lastIndexOf('\n');
    if (last < 0) {
      this.partial = all;
      return '';
    }
    this.partial = all.slice(last + 1);
    return this.lines(all.slice(0, last));
  }

  /** The rest of the text and the `# EOF` line. */
  end(): string {
    const rest = this.partial === '' ? '' : this.lines(this.partial);
    this.partial = '';
    return `${rest}# EOF\n`;
  }

  private lines(text: string): string {
    const out: string[] = [];
    for (const line of text.split('\n')) {
      if (line === '') continue;
      if (line.startsWith('# HELP ')) {
        const rest = line.slice(7);
        const sp = rest.indexOf(' ');
        this.pendingHelp =
          sp < 0 ? { name: rest, text: '' } : { name: rest.slice(0, sp), text: rest.slice(sp + 1) };
        continue;
      }
      if (line.startsWith('# TYPE ')) {
        const [name = '', type = 'untyped'] = line.slice(7).split(' ');
        const isCounter = type === 'counter';
        const family = isCounter ? name.replace(/_total$/, '') : name;
        this.counterName = isCounter ? name : undefined;
        if (this.pendingHelp && this.pendingHelp.name === name) {
          out.push(`# HELP ${family} ${escapeOpenMetricsHelp(unescapeHelp(this.pendingHelp.text))}`);
        }
        this.pendingHelp = undefined;
        out.push(`# TYPE ${family} ${OM_TYPES[type] ?? 'unknown'}`);
        continue;
      }
      if (line.startsWith('#')) continue;
      const counterName = this.counterName;
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
    return out.length === 0 ? '' : `${out.join('\n')}\n`;
  }
}

/** Converts Prometheus text format 0.0.4 (as prom-client writes it) to OpenMetrics 1.0 text. */
export function toOpenMetrics(text: string): string {
  const converter = new OpenMetricsConverter();
  return converter.push(text) + converter.end();
}

/**
 * Text rendered after a registry's own metrics, in pieces of whole lines (a store of series pushed
 * by other processes). Each piece is handed on before the next is asked for.
 */
export type ExpositionSource = () => Iterable<string>;

interface Appended {
  /** The registry's own `metrics()`, before it was wrapped. */
  own: () => Promise<string>;
  sources: ExpositionSource[];
}

const appended = new WeakMap<Registry, Appended>();

/**
 * Makes every render of `registry` end with the text of `source`: the streamed one
 * ({@link streamMetrics}) piece by piece, and `registry.metrics()` (prom-client has no hook for text
 * it does not format itself, so the instance's method is wrapped) as one string, for the callers
 * that need one (a Pushgateway push).
 */
export function appendExposition(registry: Registry, source: ExpositionSource): void {
  let entry = appended.get(registry);
  if (!entry) {
    const own = registry.metrics.bind(registry);
    const created: Appended = { own, sources: [] };
    entry = created;
    appended.set(registry, created);
    registry.metrics = async () => {
      let text = await own();
      for (const src of created.sources) {
        let piece = '';
        for (const chunk of src()) piece += chunk;
        if (piece !== '') text = `${text}\n${piece}`;
      }
      return text;
    };
  }
  entry.sources.push(source);
}

/** A streamed scrape: the content type, and the body in pieces. */
export interface StreamedMetrics {
  contentType: string;
  body: AsyncIterable<string>;
}

/** Waits for the event loop to run what is waiting (I/O, timers) before going on. */
function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * The registry's text in pieces: its own metrics (prom-client renders them as one string; they are
 * the process's few), then each appended source a piece at a time, yielding to the event loop
 * between pieces, so a large scrape neither is one string in memory nor holds up other requests
 * (a liveness probe answers during it).
 */
async function* textPieces(registry: Registry): AsyncGenerator<string, void, undefined> {
  const entry = appended.get(registry);
  if (!entry) {
    yield await registry.metrics();
    return;
  }
  yield await entry.own();
  for (const source of entry.sources) {
    let first = true;
    for (const chunk of source()) {
      if (chunk === '') continue;
      yield first ? `\n${chunk}` : chunk;
      first = false;
      await yieldToEventLoop();
    }
  }
}

async function* openMetricsPieces(pieces: AsyncIterable<string>): AsyncGenerator<string, void, undefined> {
  const converter = new OpenMetricsConverter();
  for await (const piece of pieces) {
    const out = converter.push(piece);
    if (out !== '') yield out;
  }
  yield converter.end();
}

/**
 * Renders a registry for a scraper's `Accept` header as a stream ({@link renderMetrics} in pieces):
 * what a `/metrics` handler writes as it comes, with backpressure.
 */
export function streamMetrics(registry: Registry, accept: string | undefined): StreamedMetrics {
  if (registry.contentType !== PROMETHEUS_CONTENT_TYPE) {
    return { contentType: registry.contentType, body: textPieces(registry) };
  }
  if (wantsOpenMetrics(accept)) {
    return { contentType: OPENMETRICS_CONTENT_TYPE, body: openMetricsPieces(textPieces(registry)) };
  }
  return { contentType: PROMETHEUS_CONTENT_TYPE, body: textPieces(registry) };
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
