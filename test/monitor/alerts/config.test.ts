/**
 * The monitor's `alerts` section through loadMonitorConfig: channels from `SVC_MONITOR__ALERTS__CHANNELS`
 * as a JSON list, defaults, and bad channels stopped with a message that names the key and hides secrets.
 */
import { ConfigError } from '../../../shared/config';
import { loadMonitorConfig } from '../../../services/monitor/config';

const load = (env: Record<string, string>) => loadMonitorConfig(undefined, { env, file: null });

function failure(env: Record<string, string>): string {
  try {
    load(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected the config to be refused');
}

describe('monitor alerts config', () => {
  it('has one log channel by default (no channel listed) and the documented bounds', () => {
    const { alerts } = load({});
    expect(alerts).toMatchObject({
      channels: [],
      digest_interval_seconds: 3600,
      recent_size: 200,
      max_watchers: 1000,
      watch_buffer_size: 256,
      max_exception_series: 500,
    });
  });

  it('reads every channel type from SVC_MONITOR__ALERTS__CHANNELS as a JSON list', () => {
    const { alerts } = load({
      SVC_MONITOR__ALERTS__CHANNELS: JSON.stringify([
        { name: 'log', type: 'log', min_severity: 'warning' },
        {
          name: 'pager',
          type: 'webhook',
          tiers: ['P0_PAGE'],
          webhook: { url: 'https://hooks.example.com/T0KEN', headers: { authorization: 'Bearer h' } },
        },
        {
          name: 'oncall',
          type: 'notification',
          notification: {
            grpc_address: 'notification:50051',
            api_token: 'tok',
            email_to: ['oncall@example.com'],
            sms_to: ['+15551234567'],
            email_backend: 'relay',
          },
        },
      ]),
      SVC_MONITOR__ALERTS__DIGEST_INTERVAL_SECONDS: '30m',
    });
    expect(alerts.digest_interval_seconds).toBe(1800);
    expect(alerts.channels).toEqual([
      { name: 'log', type: 'log', tiers: [], min_severity: 'warning' },
      {
        name: 'pager',
        type: 'webhook',
        tiers: ['P0_PAGE'],
        min_severity: 'low',
        webhook: {
          url: 'https://hooks.example.com/T0KEN',
          headers: { authorization: 'Bearer h' },
          timeout_ms: 5000,
          max_attempts: 4,
          backoff_ms: 500,
        },
      },
      {
        name: 'oncall',
        type: 'notification',
        tiers: [],
        min_severity: 'low',
        notification: {
          grpc_address: 'notification:50051',
          api_token: 'tok',
          email_to: ['oncall@example.com'],
          sms_to: ['+15551234567'],
          email_backend: 'relay',
          timeout_ms: 5000,
          max_attempts: 3,
        },
      },
    ]);
  });

  it.each([
    [[{ name: 'x', type: 'pigeon' }], 'monitor.alerts.channels'],
    [[{ name: 'n', type: 'notification', notification: { grpc_address: 'h:1' } }], 'at least one recipient'],
    [
      [
        {
          name: 'n',
          type: 'notification',
          notification: { grpc_address: 'h:1', email_to: ['not-an-address'] },
        },
      ],
      'email',
    ],
    [[{ name: 'w', type: 'webhook', webhook: { url: 'http://h', timeout_ms: 0 } }], 'timeout_ms'],
    [[{ name: 'l', type: 'log', min_severity: 'urgent' }], 'min_severity'],
  ])('refuses channels %j naming the key (%s)', (channels, reason) => {
    const message = failure({ SVC_MONITOR__ALERTS__CHANNELS: JSON.stringify(channels) });
    expect(message).toContain(reason);
    expect(message).toContain('SVC_MONITOR__ALERTS__CHANNELS');
  });

  it('does not repeat a secret of a refused channel in its message', () => {
    const message = failure({
      SVC_MONITOR__ALERTS__CHANNELS: JSON.stringify([
        {
          name: 'n',
          type: 'notification',
          notification: { grpc_address: 'h:1', api_token: 12345678, email_to: ['a@example.com'] },
        },
      ]),
    });
    expect(message).toContain('api_token');
    expect(message).not.toContain('12345678');
  });
});
