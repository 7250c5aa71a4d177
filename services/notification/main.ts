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
    if (app.auth.demoMode) {
      // No admin keys configured (never in production): a ready link for the demo user.
      const link = await app.auth.demoLoginUrl(`http://${host}:${ports.http}`);
      logger.info({ user: config.admin.auth.demo_user }, `admin page (demo login, valid 12 h): ${link}`);
    }
    return {
      describe: () => `gRPC ${host}:${ports.grpc}, HTTP http://${host}:${ports.http}`,
      stop: () => app.stop(),
    };
  },
});
