/**
 * The span store's bounds (capacity, age, per trace), its duplicate rule and the tracing limits,
 * and that each is counted on the registry /metrics renders.
 */
import { Registry } from 'prom-client';
import { MetricsCollector } from '../../../shared/monitoring';
import { SpanStore, type SpanStoreOptions } from '../../../services/monitor/traces/span-store';
import type { SpanInput } from '../../../services/monitor/traces/span';

const TRACE_A = 'a'.repeat(32);
const TRACE_B = 'b'.repeat(32);

function span(traceId: string, n: number, extra: Partial<SpanInput> = {}): SpanInput {
  return {
    traceId,
    spanId: n.toString(16).padStart(16, '0'),
    parentSpanId: '',
    name: `op-${n}`,
    kind: 'internal',
    startNs: BigInt(1_000 + n),
    endNs: BigInt(2_000 + n),
    attributes: {},
    events: [],
    links: [],
    statusCode: 'unset',
    statusMessage: '',
    serviceName: 'svc',
    ...extra,
  };
}

function makeStore(options: Partial<SpanStoreOptions> = {}) {
  const registry = new Registry();
  let now = 1_000_000;
  const store = new SpanStore(
    {
      maxSpans: 100,
      maxSpansPerTrace: 50,
      ttlSeconds: 60,
      maxAttributes: 128,
      maxEvents: 128,
      maxLinks: 128,
      maxStringLength: 4096,
      maxListLength: 128,
      maxSpanBytes: 256 * 1024,
      maxStoreBytes: 64 * 1024 * 1024,
      clock: { now: () => now, monotonic: () => now },
      ...options,
    },
    new MetricsCollector({ registry }),
  );
  return {
    store,
    advance: (ms: number) => (now += ms),
    metric: async (name: string, labels: string) => {
      const text = await registry.metrics();
      const m = new RegExp(`^${name}${labels ? `\\{${labels}\\}` : ''} (\\d+)$`, 'm').exec(text);
      return m ? Number(m[1]) : 0;
    },
  };
}

describe('SpanStore', () => {
  it('returns a trace’s spans in start order, whatever order they arrived in', () => {
    const { store } = makeStore();
    store.add([
      span(TRACE_A, 3, { startNs: 30n }),
      span(TRACE_A, 1, { startNs: 10n }),
      span(TRACE_A, 2, { startNs: 20n }),
    ]);
    store.add([span(TRACE_B, 4)]);
    expect(store.getTrace(TRACE_A).map((s) => s.name)).toEqual(['op-1', 'op-2', 'op-3']);
    expect(store.getTrace('c'.repeat(32))).toEqual([]);
  });

  it('at max_spans evicts the oldest span to make room and counts it', async () => {
    const { store, metric } = makeStore({ maxSpans: 3 });
    store.add([span(TRACE_A, 1), span(TRACE_A, 2), span(TRACE_A, 3)]);
    const result = store.add([span(TRACE_B, 4)]);
    expect(result.stored).toHaveLength(1);
    expect(store.size).toBe(3);
    expect(store.getTrace(TRACE_A).map((s) => s.name)).toEqual(['op-2', 'op-3']);
    expect(store.getTrace(TRACE_B)).toHaveLength(1);
    expect(await metric('monitor_spans_evicted_total', 'reason="capacity"')).toBe(1);
  });

  it('drops a trace entirely once its last span is evicted', () => {
    const { store } = makeStore({ maxSpans: 1 });
    store.add([span(TRACE_A, 1)]);
    store.add([span(TRACE_B, 2)]);
    expect(store.getTrace(TRACE_A)).toEqual([]);
    expect(store.size).toBe(1);
  });

  it('expires spans older than the TTL and counts them', async () => {
    const { store, advance, metric } = makeStore({ ttlSeconds: 10 });
    store.add([span(TRACE_A, 1)]);
    advance(5_000);
    store.add([span(TRACE_A, 2)]);
    advance(6_000);
    expect(store.getTrace(TRACE_A).map((s) => s.name)).toEqual(['op-2']);
    advance(5_000);
    expect(store.getTrace(TRACE_A)).toEqual([]);
    expect(store.size).toBe(0);
    expect(await metric('monitor_spans_evicted_total', 'reason="expired"')).toBe(2);
  });

  it('rejects spans beyond max_spans_per_trace, so one trace cannot evict the others', async () => {
    const { store, metric } = makeStore({ maxSpans: 10, maxSpansPerTrace: 3 });
    store.add([span(TRACE_B, 100)]);
    const result = store.add([1, 2, 3, 4, 5].map((n) => span(TRACE_A, n)));
    expect(result.stored).toHaveLength(3);
    expect(result.rejected).toBe(2);
    expect(store.getTrace(TRACE_B)).toHaveLength(1);
    expect(await metric('monitor_spans_rejected_total', 'reason="trace_full"')).toBe(2);
  });

  it('keeps the first copy of a span and rejects a duplicate (an exporter retry)', async () => {
    const { store, metric } = makeStore();
    store.add([span(TRACE_A, 1, { name: 'first' })]);
    const result = store.add([span(TRACE_A, 1, { name: 'retry' }), span(TRACE_A, 2)]);
    expect(result).toMatchObject({ rejected: 1 });
    expect(result.stored.map((s) => s.name)).toEqual(['op-2']);
    expect(store.getTrace(TRACE_A)[0]!.name).toBe('first');
    expect(await metric('monitor_spans_rejected_total', 'reason="duplicate"')).toBe(1);
  });

  it('applies the attribute, event and link limits: excess dropped and counted, not refused', async () => {
    const { store, metric } = makeStore({ maxAttributes: 2, maxEvents: 1, maxLinks: 1 });
    const attributes = { a: 1, b: 2, c: 3, d: 4 };
    const events = [1, 2, 3].map((n) => ({
      name: `e${n}`,
      timeNs: BigInt(n),
      attributes: { x: 1, y: 2, z: 3 },
    }));
    const links = [1, 2].map((n) => ({
      traceId: TRACE_B,
      spanId: n.toString(16).padStart(16, '0'),
      attributes: {},
    }));
    const { stored } = store.add([span(TRACE_A, 1, { attributes, events, links })]);
    const s = stored[0]!;
    expect(s.attributes).toEqual({ a: 1, b: 2 });
    // The SDK's rule: the oldest events go first.
    expect(s.events.map((e) => e.name)).toEqual(['e3']);
    expect(s.events[0]!.attributes).toEqual({ x: 1, y: 2 });
    expect(s.links).toHaveLength(1);
    expect(s.dropped).toEqual({ attributes: 3, events: 2, links: 1 });
    expect(await metric('monitor_span_limits_dropped_total', 'item="attributes"')).toBe(3);
    expect(await metric('monitor_span_limits_dropped_total', 'item="events"')).toBe(2);
    expect(await metric('monitor_span_limits_dropped_total', 'item="links"')).toBe(1);
  });

  it('cuts strings to max_string_length, nested ones too', async () => {
    const { store, metric } = makeStore({ maxStringLength: 4 });
    const { stored } = store.add([
      span(TRACE_A, 1, {
        name: 'abcdefgh',
        attributes: { key: 'value-long', list: ['123456'], obj: { k: 'zzzzzz' } },
      }),
    ]);
    expect(stored[0]!.name).toBe('abcd');
    expect(stored[0]!.attributes).toEqual({ key: 'valu', list: ['1234'], obj: { k: 'zzzz' } });
    expect(await metric('monitor_span_limits_dropped_total', 'item="strings"')).toBe(4);
  });

  it('never cuts a string between the halves of a surrogate pair (emoji), and leaves CJK and RTL text whole', () => {
    const { store } = makeStore({ maxStringLength: 5 });
    const { stored } = store.add([
      span(TRACE_A, 1, {
        // 'abcd' + an emoji (two code units): a cut at 5 would leave half of it.
        name: 'abcd\u{1F600}xyz',
        attributes: { cjk: '漢字かな交じり文', rtl: 'שלום עולם', emoji: '\u{1F600}\u{1F601}\u{1F602}' },
      }),
    ]);
    expect(stored[0]!.name).toBe('abcd');
    expect(stored[0]!.attributes).toEqual({ cjk: '漢字かな交', rtl: 'שלום ', emoji: '\u{1F600}\u{1F601}' });
    for (const text of [stored[0]!.name, ...Object.values(stored[0]!.attributes).map(String)]) {
      expect(text).toBe(Buffer.from(text, 'utf8').toString('utf8'));
    }
  });

  it('cuts lists to max_list_length (lists inside lists and maps too) and counts the cut elements', async () => {
    const { store, metric } = makeStore({ maxListLength: 3 });
    const { stored } = store.add([
      span(TRACE_A, 1, { attributes: { l: [1, 2, 3, 4, 5], deep: { m: [[1, 2, 3, 4], 'a', 'b', 'c'] } } }),
    ]);
    expect(stored[0]!.attributes).toEqual({ l: [1, 2, 3], deep: { m: [[1, 2, 3], 'a', 'b'] } });
    expect(stored[0]!.dropped).toEqual({ attributes: 0, events: 0, links: 0 });
    expect(await metric('monitor_span_limits_dropped_total', 'item="list_values"')).toBe(2 + 1 + 1);
  });

  it('keeps a span within max_span_bytes: attributes first ones first, events newest first, links while they fit', async () => {
    // Estimated: the span's fixed part 366 bytes, each attribute of 512 characters 1034, `e` 18, an
    // event 70, a link 128: 3600 holds the fixed part, a, b, c, e and the newest event.
    const { store, metric } = makeStore({ maxSpanBytes: 3600 });
    const kb = 'x'.repeat(512); // 1 KiB estimated
    const { stored } = store.add([
      span(TRACE_A, 1, {
        attributes: { a: kb, b: kb, c: kb, d: kb, e: 1 },
        events: [
          { name: 'old', timeNs: 1n, attributes: {} },
          { name: 'new', timeNs: 2n, attributes: {} },
        ],
        links: [{ traceId: TRACE_B, spanId: '1'.padStart(16, '0'), attributes: {} }],
      }),
    ]);
    const s = stored[0]!;
    // The fixed part and three 1 KiB attributes fit; the fourth does not, the small one after it does.
    expect(Object.keys(s.attributes)).toEqual(['a', 'b', 'c', 'e']);
    expect(s.events.map((e) => e.name)).toEqual(['new']);
    expect(s.links).toHaveLength(0);
    expect(s.dropped).toEqual({ attributes: 1, events: 1, links: 1 });
    expect(await metric('monitor_span_limits_dropped_total', 'item="attributes"')).toBe(1);
    expect(store.bytes).toBeLessThanOrEqual(3600);
  });

  it('holds at most max_store_bytes, evicting the oldest spans (reason bytes), and frees the bytes of evicted spans', async () => {
    const { store, metric, advance } = makeStore({
      maxSpans: 1000,
      maxStoreBytes: 16 * 1024,
      maxSpanBytes: 8 * 1024,
    });
    const big = 'y'.repeat(2048); // 4 KiB estimated
    for (let i = 1; i <= 20; i++) {
      store.add([span(TRACE_A, i, { attributes: { big } })]);
      expect(store.bytes).toBeLessThanOrEqual(16 * 1024);
    }
    expect(store.size).toBe(3);
    expect(store.getTrace(TRACE_A).map((s) => s.name)).toEqual(['op-18', 'op-19', 'op-20']);
    expect(await metric('monitor_spans_evicted_total', 'reason="bytes"')).toBe(17);
    expect(await metric('monitor_span_store_bytes', '')).toBe(store.bytes);
    advance(61_000);
    expect(store.getTrace(TRACE_A)).toEqual([]);
    expect(store.bytes).toBe(0);
  });
});

describe('SpanStore ordering', () => {
  it('puts a parent before its children when they started at the same instant', () => {
    const { store } = makeStore();
    // Span ids chosen so that id order would put the children first.
    const root = span(TRACE_A, 9, { startNs: 100n });
    const child = span(TRACE_A, 5, { startNs: 100n, parentSpanId: root.spanId });
    const grandchild = span(TRACE_A, 1, { startNs: 100n, parentSpanId: child.spanId });
    store.add([grandchild, child, root]);
    expect(store.getTrace(TRACE_A).map((s) => s.name)).toEqual(['op-9', 'op-5', 'op-1']);
  });
});
