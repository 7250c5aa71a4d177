/**
 * The ingested series in the Prometheus text format (0.0.4): label blocks and headers built once,
 * the lines of a series, what a series takes on a scrape, and the families streamed in chunks after
 * the monitor's own metrics. Decisions (escaping, chunks, the monitor's names winning) are in
 * ./README.md.
 */
import type { Registry } from 'prom-client';
import { appendExposition } from '../../../shared/monitoring/exposition';
import type { Family, Series } from './metric-series';
import type { IngestMetricType } from './metric-validation';

/** Characters of a rendered chunk before it is handed on (the scrape is streamed in such chunks). */
export const RENDER_CHUNK_CHARS = 64 * 1024;

const NEEDS_ESCAPE = /[\\"\n]/;

/**
 * The families in chunks of about `chunkChars` characters, whole lines each, one block per name. A
 * name the monitor's own registry has taken since it was ingested is left out: the monitor's metric
 * wins; a name is never rendered twice in one scrape.
 */
export function* renderFamilies(
  families: Iterable<Family>,
  registry: Registry,
  chunkChars: number,
): Generator<string, void, undefined> {
  const rendered = new Set<string>();
  let out = '';
  for (const f of families) {
    if (rendered.has(f.name) || registry.getSingleMetric(f.name)) continue;
    rendered.add(f.name);
    // A blank line between names, as prom-client writes them.
    out += rendered.size > 1 ? `\n${f.header}` : f.header;
    for (const s of f.series.values()) {
      out += seriesLines(f, s);
      if (out.length >= chunkChars) {
        yield out;
        out = '';
      }
    }
  }
  if (out !== '') yield out;
}

/** The `# HELP` and `# TYPE` lines of a family. */
export function familyHeader(exportName: string, type: IngestMetricType, description: string): string {
  return `# HELP ${exportName} ${escapeHelp(description)}\n# TYPE ${exportName} ${type}\n`;
}

/** `le="..."` of each bound, then `le="+Inf"`. */
export function leLabels(bounds: readonly number[]): string[] {
  return [...bounds.map((b) => `le="${num(b)}"`), 'le="+Inf"'];
}

/** The lines of one series in the text format. */
export function seriesLines(f: Family, s: Series): string {
  if (f.type === 'counter' || f.type === 'gauge') return `${f.name}{${s.labelText}} ${num(s.value)}\n`;
  let out = '';
  if (f.type === 'histogram') {
    const le = f.leText!;
    const b = s.buckets!;
    let cumulative = 0;
    for (let i = 0; i < le.length; i++) {
      cumulative += b[i]!;
      out += `${f.name}_bucket{${s.labelText},${le[i]}} ${num(cumulative)}\n`;
    }
  }
  return `${out}${f.name}_sum{${s.labelText}} ${num(s.sum)}\n${f.name}_count{${s.labelText}} ${num(s.count)}\n`;
}

// A sample's value as written: at most 24 characters (`-1.2345678901234567e+308`), plus the
// space, the braces and the newline.
const VALUE_CHARS = 28;

/**
 * What one series takes on a scrape (in characters: label values are counted in UTF-16 code units),
 * its label block repeated on each of its lines: one for a counter or gauge, two for a summary
 * (`_sum`, `_count`), and one per bucket plus two for a histogram.
 */
export function renderedBytes(f: Family, labelText: string): number {
  const line = f.name.length + labelText.length + VALUE_CHARS;
  if (f.type === 'counter' || f.type === 'gauge') return line;
  if (f.type === 'summary') return 2 * (line + 6);
  return f.leText!.reduce((n, le) => n + line + 8 + le.length, 2 * (line + 6));
}

/** The label block of a series: the family's keys in order (missing ones ""), then `service`. */
export function renderLabels(
  keys: readonly string[],
  labels: Readonly<Record<string, string>>,
  service: string,
): string {
  let out = '';
  for (const k of keys) {
    // Not `?? ''`: a key such as `constructor` left out would read Object.prototype's.
    const v = Object.hasOwn(labels, k) ? labels[k]! : '';
    out += `${k}="${escapeLabelValue(v)}",`;
  }
  return `${out}service="${escapeLabelValue(service)}"`;
}

export function escapeLabelValue(v: string): string {
  if (!NEEDS_ESCAPE.test(v)) return v;
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

export function escapeHelp(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/** A sample value as the text format writes it (Go's ParseFloat reads JavaScript's numbers). */
export function num(v: number): string {
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

/** What appendToRegistry needs of the store. */
export interface ChunkRenderer {
  renderChunks(): Iterable<string>;
}

/**
 * Makes every render of `registry` (the monitor's `/metrics`, text or OpenMetrics) end with the
 * store's series: streamed in chunks on `/metrics` (the scrape is never one string, and other
 * requests are answered between chunks), and as one string from `registry.metrics()`.
 */
export function appendToRegistry(registry: Registry, store: ChunkRenderer): void {
  appendExposition(registry, () => store.renderChunks());
}
