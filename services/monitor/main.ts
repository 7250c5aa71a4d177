/** Entry point of the monitor service process: `node dist/services/monitor/main.js`. */
import { runService } from '../../shared/runtime/run-service';
import { redactSecrets } from '../../shared/config';
import { loadMonitorConfig } from './config';
import { createMonitorApp } from './app';

runService({
  name: 'monitor',
  loadConfig: () => loadMonitorConfig(),
  logLevel: (config) => config.log.level,
  async start(config, logger) {
    logger.info({ config: redactSecrets(config) }, 'effective configuration');
    const app = await createMonitorApp(config, logger);
    const ports = await app.start();
    const host = config.server.host === '0.0.0.0' ? 'localhost' : config.server.host;
    return {
      describe: () => `gRPC ${host}:${ports.grpc}, HTTP http://${host}:${ports.http}`,
      stop: () => app.stop(),
    };
  },
});
