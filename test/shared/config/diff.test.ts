import { differingKeys } from '../../../shared/config';
import { loadMonitorConfig } from '../../../services/monitor/config';

describe('differingKeys (the start line logs only what was set)', () => {
  test('keeps nested keys that differ, whole lists, new keys; drops equal ones', () => {
    const defaults = { a: 1, b: { c: 2, d: [1, 2], e: { f: 'x' } }, g: 'same' };
    const actual = { a: 1, b: { c: 3, d: [1, 2, 3], e: { f: 'x' } }, g: 'same', h: 'new' };
    expect(differingKeys(actual, defaults)).toEqual({ b: { c: 3, d: [1, 2, 3] }, h: 'new' });
  });

  test('nothing set: an empty object', () => {
    const defaults = loadMonitorConfig(undefined, { env: {}, file: null });
    expect(differingKeys(loadMonitorConfig(undefined, { env: {}, file: null }), defaults)).toEqual({});
  });

  test('one key set through the environment is the only key logged, with text in any script intact', () => {
    const defaults = loadMonitorConfig(undefined, { env: {}, file: null });
    const actual = loadMonitorConfig(undefined, {
      env: { SVC_MONITOR__SERVER__GRPC_PORT: '7001', SVC_MONITOR__NAME: 'מוניטור-監視-📈' },
      file: null,
    });
    expect(differingKeys(actual, defaults)).toEqual({ name: 'מוניטור-監視-📈', server: { grpc_port: 7001 } });
  });
});
