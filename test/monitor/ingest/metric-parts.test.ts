/**
 * The parts the ingested series store is made of, each on its own: the sample checks (validation),
 * the text rendering, and the expiry schedule. The store's own behaviour is in metric-store.test.ts.
 */
import {
  checkLabelName,
  checkMetricName,
  checkOp,
  quote,
} from '../../../services/monitor/ingest/metric-validation';
import { escapeHelp, num, renderLabels } from '../../../services/monitor/ingest/metric-render';
import { SeriesExpiry } from '../../../services/monitor/ingest/metric-expiry';
import { FakeClock } from '../../shared/monitoring/helpers';

describe('metric validation', () => {
  it('refuses names outside the Prometheus patterns and reserved label names, with the fixed reasons', () => {
    expect(checkMetricName('http_requests:rate')).toBeUndefined();
    expect(checkMetricName('1abc')?.reason).toBe('invalid_name');
    expect(checkMetricName('a'.repeat(201))?.reason).toBe('invalid_name');
    expect(checkLabelName('path', 'counter')).toBeUndefined();
    expect(checkLabelName('a-b', 'counter')?.reason).toBe('invalid_label_name');
    expect(checkLabelName('__x', 'gauge')?.reason).toBe('reserved_label_name');
    expect(checkLabelName('service', 'gauge')?.reason).toBe('reserved_label_name');
    expect(checkLabelName('le', 'histogram')?.reason).toBe('reserved_label_name');
    expect(checkLabelName('le', 'gauge')).toBeUndefined();
    expect(checkLabelName('quantile', 'summary')?.reason).toBe('reserved_label_name');
  });

  it('refuses unusable numbers for the type', () => {
    expect(checkOp('counter', { kind: 'add', value: -1 })).toMatch(/non-negative/);
    expect(checkOp('gauge', { kind: 'set', value: NaN })).toMatch(/finite/);
    expect(checkOp('gauge', { kind: 'set', value: -1 })).toBeUndefined();
    const h = {
      kind: 'histogram' as const,
      bounds: [1, 1],
      counts: [0, 0, 0],
      sum: 0,
      count: 0,
      cumulative: true,
    };
    expect(checkOp('histogram', h)).toMatch(/increasing/);
    expect(checkOp('histogram', { ...h, bounds: [1, 2], counts: [0, 0] })).toMatch(/one bucket count/);
  });

  it('quotes caller input cut to 80 UTF-16 units, never inside a surrogate pair', () => {
    const s = `${'a'.repeat(79)}😀😀`;
    const quoted = quote(s);
    // 79 + 2 units would pass 80: the emoji goes whole, not half of it.
    expect(JSON.parse(quoted)).toBe(`${'a'.repeat(79)}...`);
    expect(JSON.parse(quote(`${'a'.repeat(78)}😀😀`))).toBe(`${'a'.repeat(78)}😀...`);
    expect(quote('名前')).toBe('"名前"');
  });
});

describe('metric rendering', () => {
  it('renders the label block with missing keys as "" and escapes values, CJK/RTL/emoji kept whole', () => {
    const text = renderLabels(['a', 'b', 'constructor'], { a: 'x"y\\z\nw', b: '東京 שלום 😀' }, 's');
    expect(text).toBe('a="x\\"y\\\\z\\nw",b="東京 שלום 😀",constructor="",service="s"');
    expect(escapeHelp('a\\b\nc"')).toBe('a\\\\b\\nc"');
    expect(num(Infinity)).toBe('+Inf');
    expect(num(-Infinity)).toBe('-Inf');
    expect(num(0.5)).toBe('0.5');
  });
});

describe('series expiry', () => {
  it('visits the series only when the oldest one kept has expired, and unforced at most once a second', () => {
    const clock = new FakeClock();
    const expiry = new SeriesExpiry(clock, 60_000);
    expect(expiry.expiredAt(true)).toBeUndefined(); // nothing kept
    const t0 = expiry.touch();
    expect(t0).toBe(clock.monotonic());
    clock.advance(59_000);
    expect(expiry.expiredAt(true)).toBeUndefined(); // the oldest has not expired
    clock.advance(1_000);
    expect(expiry.expiredAt(false)).toBe(clock.monotonic() - 60_000);
    expiry.swept(Infinity);
    clock.advance(500);
    expiry.touch();
    clock.advance(60_000);
    expect(expiry.expiredAt(false)).toBe(clock.monotonic() - 60_000);
    expiry.swept(Infinity);
    // Unforced, again within the second: not due.
    expiry.touch();
    clock.advance(100);
    expect(expiry.expiredAt(false)).toBeUndefined();
  });
});
