/** The span store's config keys in the monitor's `tracing` section: defaults, environment, bad values. */
import { loadMonitorConfig } from '../../../services/monitor/config';

const load = (env: Record<string, string> = {}) => loadMonitorConfig(undefined, { file: null, env });

describe('monitor.tracing span store keys', () => {
  it('default to a one-hour TTL, 1,000 spans per trace, 4,096-character strings and a 2,048-span forward queue', () => {
    expect(load().tracing).toMatchObject({
      max_spans: 10_000,
      span_ttl_seconds: 3600,
      max_spans_per_trace: 1000,
      max_string_length: 4096,
      forward_queue_size: 2048,
      // The library's keys are still there.
      sample_rate: 1.0,
    });
  });

  it('are read from SVC_MONITOR__TRACING__* variables', () => {
    const tracing = load({
      SVC_MONITOR__TRACING__SPAN_TTL_SECONDS: '60',
      SVC_MONITOR__TRACING__MAX_SPANS_PER_TRACE: '10',
      SVC_MONITOR__TRACING__MAX_SPANS: '500',
    }).tracing;
    expect(tracing).toMatchObject({ span_ttl_seconds: 60, max_spans_per_trace: 10, max_spans: 500 });
  });

  it('refuse a non-positive value, naming the key and the variable', () => {
    expect(() => load({ SVC_MONITOR__TRACING__MAX_STRING_LENGTH: '0' })).toThrow(
      /monitor\.tracing\.max_string_length.*SVC_MONITOR__TRACING__MAX_STRING_LENGTH/,
    );
  });

  it('bound lists to 128 elements, a span to 256 KiB and the store to 64 MiB by default; read from the environment', () => {
    expect(load().tracing).toMatchObject({
      max_list_length: 128,
      max_span_bytes: 256 * 1024,
      max_store_bytes: 64 * 1024 * 1024,
    });
    expect(
      load({
        SVC_MONITOR__TRACING__MAX_LIST_LENGTH: '10',
        SVC_MONITOR__TRACING__MAX_SPAN_BYTES: '2048',
        SVC_MONITOR__TRACING__MAX_STORE_BYTES: '4096',
      }).tracing,
    ).toMatchObject({ max_list_length: 10, max_span_bytes: 2048, max_store_bytes: 4096 });
  });

  it('refuse a span bound over the store bound, and a span bound under 1024', () => {
    expect(() =>
      load({ SVC_MONITOR__TRACING__MAX_SPAN_BYTES: '8192', SVC_MONITOR__TRACING__MAX_STORE_BYTES: '4096' }),
    ).toThrow(/monitor\.tracing\.max_span_bytes.*at most max_store_bytes/s);
    expect(() => load({ SVC_MONITOR__TRACING__MAX_SPAN_BYTES: '100' })).toThrow(
      /max_span_bytes.*at least 1024/s,
    );
  });

  it('refuse an unknown key in the section', () => {
    expect(() => loadMonitorConfig({ tracing: { span_ttl: 5 } as never }, { file: null, env: {} })).toThrow(
      /tracing/,
    );
  });
});
