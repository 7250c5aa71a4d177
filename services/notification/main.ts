/** Entry point of the notification service process: `node dist/services/notification/main.js`. */
import { runService } from '../../shared/runtime/run-service';
import { redactSecrets } from '../../shared/config';
import { loadNotificationConfig } from './config';
import { createNotificationApp } from './app';

runService({
  name: 'notification',
  loadConfig: () => loadNotificationConfig(),
  logLevel: (config) => config.log.level,
  async start(config, logger) {
    logger.info({ config: redactSecrets(config) }, 'effective configuration');
    const app = await createNotificationApp(config, logger);
    const ports = await app.start();
    const host = config.server.host === '0.0.0.0' ? 'localhost' : config.server.host;
    return {
      describe: () => `gRPC ${host}:${ports.grpc}, HTTP http://${host}:${ports.http}`,
      stop: () => app.stop(),
    };
  },
});
