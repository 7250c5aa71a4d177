/** The `server` section's limit keys reach the RPC server, from the file or the environment. */
import { loadNotificationConfig } from '../../../services/notification/config';
import { serverOptionsFromConfig } from '../../../shared/rpc/server';

describe('server limits in the config', () => {
  test('each limit key, set by environment variable, becomes the matching server option', () => {
    const config = loadNotificationConfig(undefined, {
      file: null,
      env: {
        SVC_NOTIFICATION__SERVER__MAX_CONCURRENT_STREAMS: '7',
        SVC_NOTIFICATION__SERVER__HTTP_MAX_CONNECTIONS: '8',
        SVC_NOTIFICATION__SERVER__HTTP_HEADERS_TIMEOUT_MS: '900',
        SVC_NOTIFICATION__SERVER__HTTP_REQUEST_TIMEOUT_MS: '1900',
      },
    });
    expect(serverOptionsFromConfig(config.server)).toMatchObject({
      maxConcurrentStreams: 7,
      httpMaxConnections: 8,
      httpHeadersTimeoutMs: 900,
      httpRequestTimeoutMs: 1900,
    });
  });

  test.each([['max_concurrent_streams'], ['http_max_connections'], ['http_headers_timeout_ms']])(
    'server.%s of 0 is refused, naming the key',
    (key) => {
      expect(() => loadNotificationConfig({ server: { [key]: 0 } }, { file: null, env: {} })).toThrow(key);
    },
  );
});
