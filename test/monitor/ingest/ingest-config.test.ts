/** The ingest keys of the monitor's `metrics` section: defaults, environment variables, bad values. */
import { loadMonitorConfig } from '../../../services/monitor/config';

describe('metrics ingest config', () => {
  it('has bounded defaults for every ingest key', () => {
    const { metrics } = loadMonitorConfig({}, { env: {}, file: null });
    expect(metrics).toMatchObject({
      max_metric_names: 1000,
      max_series_per_metric: 1000,
      max_series: 100_000,
      series_ttl_seconds: 3600,
      max_labels_per_sample: 16,
      max_label_value_length: 256,
      max_ingest_bytes: 64 * 1024 * 1024,
      max_description_length: 1024,
    });
  });

  it('reads the keys from SVC_MONITOR__METRICS__* variables', () => {
    const { metrics } = loadMonitorConfig(
      {},
      {
        env: {
          SVC_MONITOR__METRICS__SERIES_TTL_SECONDS: '60',
          SVC_MONITOR__METRICS__MAX_SERIES: '5000',
          SVC_MONITOR__METRICS__MAX_LABELS_PER_SAMPLE: '4',
        },
        file: null,
      },
    );
    expect(metrics.series_ttl_seconds).toBe(60);
    expect(metrics.max_series).toBe(5000);
    expect(metrics.max_labels_per_sample).toBe(4);
  });

  it('refuses a non-positive bound, naming the key and the variable', () => {
    expect(() =>
      loadMonitorConfig({}, { env: { SVC_MONITOR__METRICS__SERIES_TTL_SECONDS: '0' }, file: null }),
    ).toThrow(
      'monitor.metrics.series_ttl_seconds: expected a positive integer, got 0 (from environment variable SVC_MONITOR__METRICS__SERIES_TTL_SECONDS)',
    );
  });
});
