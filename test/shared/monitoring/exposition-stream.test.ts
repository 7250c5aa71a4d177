/**
 * The streamed exposition (shared/monitoring/exposition.ts): a registry with appended text renders
 * the same, as one string or piece by piece, in the text format and in OpenMetrics, whatever the
 * pieces' boundaries.
 */
import { Counter, Gauge, Registry } from 'prom-client';
import {
  OpenMetricsConverter,
  appendExposition,
  renderMetrics,
  streamMetrics,
  toOpenMetrics,
} from '../../../shared/monitoring/exposition';
import { promtool } from './helpers';

async function collect(body: AsyncIterable<string>): Promise<string[]> {
  const pieces: string[] = [];
  for await (const piece of body) pieces.push(piece);
  return pieces;
}

function registryWithAppended(): Registry {
  const registry = new Registry();
  new Counter({ name: 'own_hits_total', help: 'own "hits"', registers: [registry] }).inc(2);
  new Gauge({ name: 'own_level', help: 'level', registers: [registry] }).set(1);
  appendExposition(registry, function* () {
    yield '# HELP pushed_total pushed\n# TYPE pushed_total counter\n';
    for (let i = 0; i < 5; i++) yield `pushed_total{i="${i}"} ${i}\n`;
    yield '\n# HELP pushed_level g\n# TYPE pushed_level gauge\npushed_level 3\n';
  });
  return registry;
}

describe('streamMetrics', () => {
  it('streams the registry and its appended text in pieces, the same text as renderMetrics', async () => {
    const registry = registryWithAppended();
    const streamed = streamMetrics(registry, undefined);
    const pieces = await collect(streamed.body);
    expect(pieces.length).toBeGreaterThan(2);
    const whole = await renderMetrics(registry, undefined);
    expect(pieces.join('')).toBe(whole.body);
    expect(streamed.contentType).toBe(whole.contentType);
    expect(whole.body).toContain('pushed_total{i="4"} 4');
    expect(promtool(whole.body)).toEqual({ status: 0, output: '' });
  });

  it('converts to OpenMetrics piece by piece, the same as converting the whole text', async () => {
    const registry = registryWithAppended();
    const accept = 'application/openmetrics-text; version=1.0.0';
    const streamed = (await collect(streamMetrics(registry, accept).body)).join('');
    expect(streamed).toBe((await renderMetrics(registry, accept)).body);
    expect(streamed.endsWith('# EOF\n')).toBe(true);
  });

  it('OpenMetricsConverter gives the same output whatever the pieces, lines split anywhere', () => {
    const text =
      '# HELP a_total a "quoted" \\\\ help\n# TYPE a_total counter\na_total{x="1"} 1\n\n' +
      '# HELP b b\n# TYPE b counter\nb 2\nb_created 1\n# TYPE c gauge\nc 3';
    const converter = new OpenMetricsConverter();
    let out = '';
    for (const ch of text) out += converter.push(ch);
    out += converter.end();
    expect(out).toBe(toOpenMetrics(text));
    expect(out).toContain('b_total 2');
  });
});
