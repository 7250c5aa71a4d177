/** Entry point of the monitor service process: `node dist/services/monitor/main.js`. */
import { runService } from '../../shared/runtime/run-service';
import { loadMonitorConfig } from './config';
import { createMonitorApp } from './app';

runService({
  name: 'monitor',
  loadConfig: () => loadMonitorConfig(),
  async start(config, logger) {
    const app = await createMonitorApp(config, logger);
    return { ports: await app.start(), stop: () => app.stop() };
  },
});
