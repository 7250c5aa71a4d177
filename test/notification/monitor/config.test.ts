/**
 * The `notification.monitor` section: defaults, SLOs from the environment as a JSON list, and bad
 * values that stop the service with a message naming the key (never echoing the token).
 */
import { ConfigError } from '../../../shared/config';
import { loadNotificationConfig } from '../../../services/notification/config';

const load = (env: Record<string, string>) => loadNotificationConfig(undefined, { file: null, env });

describe('notification.monitor config', () => {
  it('SVC_NOTIFICATION__MONITOR__* set the address, token and SLOs (a JSON list), with the monitor defaults filled in', () => {
    const config = load({
      SVC_NOTIFICATION__MONITOR__GRPC_ADDRESS: 'monitor:50052',
      SVC_NOTIFICATION__MONITOR__API_TOKEN: 'tok-123',
      SVC_NOTIFICATION__MONITOR__SLOS: JSON.stringify([
        {
          name: 'email-p99',
          metric: 'notification_delivery_latency_email_ms',
          threshold_ms: 30000,
          window: '1h',
        },
      ]),
    });
    expect(config.monitor).toMatchObject({ grpc_address: 'monitor:50052', api_token: 'tok-123', tls: false });
    expect(config.monitor.slos).toEqual([
      {
        name: 'email-p99',
        metric: 'notification_delivery_latency_email_ms',
        percentile: 0.99,
        threshold_ms: 30000,
        window: 3600,
        tier: 'P1_BUSINESS_HOURS',
        burn_rate_threshold: 1,
        description: '',
        owner: '',
      },
    ]);
  });

  it.each([
    [{ SVC_NOTIFICATION__MONITOR__GRPC_ADDRESS: 'not an address' }, 'monitor.grpc_address'],
    [{ SVC_NOTIFICATION__MONITOR__MAX_BUFFERED: '0' }, 'monitor.max_buffered'],
    [
      {
        SVC_NOTIFICATION__MONITOR__SLOS: JSON.stringify([
          { name: 'a', metric: 'm', threshold_ms: 1, window: 0 },
        ]),
      },
      'monitor.slos[0].window',
    ],
    [
      {
        SVC_NOTIFICATION__MONITOR__SLOS: JSON.stringify([
          { name: 'a', metric: 'm', threshold_ms: 1, percentile: 1.5 },
        ]),
      },
      'monitor.slos[0].percentile',
    ],
    [
      {
        SVC_NOTIFICATION__MONITOR__SLOS: JSON.stringify([
          { name: 'a', metric: 'm', threshold_ms: 1 },
          { name: 'a', metric: 'n', threshold_ms: 2 },
        ]),
      },
      'monitor.slos[1].name',
    ],
  ])('a bad value stops the service with an error naming the key (%#)', (env, key) => {
    expect(() => load(env)).toThrow(ConfigError);
    expect(() => load(env)).toThrow(key);
  });

  it('a config error never echoes the token', () => {
    let message = '';
    try {
      load({ SVC_NOTIFICATION__MONITOR__API_TOKEN: 'secret-tok', SVC_NOTIFICATION__MONITOR__TLS: 'maybe' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('monitor.tls');
    expect(message).not.toContain('secret-tok');
  });
});
