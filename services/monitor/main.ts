/**
 * Entry point of the monitor service process: `node dist/services/monitor/main.js`. The composition
 * root is required inside `start`, after the runner has started tracing: the gRPC instrumentation
 * patches `@grpc/grpc-js` only if it is loaded after the SDK starts.
 */
import { runService } from '../../shared/runtime/run-service';
import { loadMonitorConfig } from './config';
import type * as App from './app';

runService({
  name: 'monitor',
  loadConfig: () => loadMonitorConfig(),
  defaultConfig: () => loadMonitorConfig(undefined, { env: {}, file: null }),
  telemetry: (config) => config,
  async start(config, logger) {
    // A require here, not an import at the top (see above); the type import is erased.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { createMonitorApp } = require('./app') as typeof App;
    const app = await createMonitorApp(config, logger);
    return { ports: await app.start(), stop: () => app.stop() };
  },
});
