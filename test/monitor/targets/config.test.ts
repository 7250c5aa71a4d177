import { loadMonitorConfig } from '../../../services/monitor/config';

function load(env: Record<string, string>) {
  return loadMonitorConfig({}, { env, file: null });
}

describe('monitor.targets config', () => {
  it('takes the list as JSON from SVC_MONITOR__TARGETS, with a fractional interval and timeout_ms', () => {
    const config = load({
      SVC_MONITOR__TARGETS: JSON.stringify([
        { name: 'notification', grpc_address: '127.0.0.1:50051', interval_seconds: 0.5, timeout_ms: 300 },
      ]),
    });
    expect(config.targets).toEqual([
      { name: 'notification', grpc_address: '127.0.0.1:50051', interval_seconds: 0.5, timeout_ms: 300 },
    ]);
  });

  it('takes one target key at a time from indexed variables', () => {
    const config = load({
      SVC_MONITOR__TARGETS__0__NAME: 'web',
      SVC_MONITOR__TARGETS__0__HTTP_URL: 'http://127.0.0.1:8080/health',
      SVC_MONITOR__TARGETS__0__TIMEOUT_MS: '250',
    });
    expect(config.targets[0]).toMatchObject({ name: 'web', timeout_ms: 250, interval_seconds: 15 });
  });

  it.each([
    [{ name: 'a', grpc_address: 'h:1', timeout_ms: 0 }, 'timeout_ms'],
    [{ name: 'a', grpc_address: 'h:1', timeout_ms: 1.5 }, 'timeout_ms'],
    [{ name: 'a', grpc_address: 'h:1', interval_seconds: 0 }, 'interval_seconds'],
    [{ name: 'a' }, 'grpc_address'],
  ])('rejects %j, naming %s', (target, key) => {
    expect(() => load({ SVC_MONITOR__TARGETS: JSON.stringify([target]) })).toThrow(key);
  });
});
