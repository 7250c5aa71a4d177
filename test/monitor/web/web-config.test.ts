import { ConfigError, redactSecrets } from '../../../shared/config';
import { loadMonitorConfig, type MonitorConfigInput } from '../../../services/monitor/config';

function load(overrides?: Partial<MonitorConfigInput>, env: Record<string, string> = {}) {
  return loadMonitorConfig(overrides, { env, file: null });
}

describe('the monitor web config section', () => {
  it('has bounded defaults', () => {
    expect(load().web).toEqual({
      api_tokens: [],
      recent_alerts: 50,
      max_sse_connections: 100,
      sse_max_buffered_bytes: 1024 * 1024,
      slo_refresh_seconds: 5,
      heartbeat_seconds: 15,
    });
  });

  it('takes the read-only tokens from SVC_MONITOR__WEB__API_TOKENS as a JSON list, and redacts them', () => {
    const config = load(undefined, { SVC_MONITOR__WEB__API_TOKENS: '["reader-a","reader-b"]' });
    expect(config.web.api_tokens).toEqual(['reader-a', 'reader-b']);
    expect(JSON.stringify(redactSecrets(config))).not.toContain('reader-a');
  });

  it('refuses more than 500 recent alerts and non-positive bounds, naming the key', () => {
    expect(() => load({ web: { recent_alerts: 501 } })).toThrow(/monitor\.web\.recent_alerts: at most 500/);
    expect(() => load({ web: { max_sse_connections: 0 } })).toThrow(ConfigError);
    expect(() => load(undefined, { SVC_MONITOR__WEB__HEARTBEAT_SECONDS: '-1' })).toThrow(
      /SVC_MONITOR__WEB__HEARTBEAT_SECONDS/,
    );
  });
});
