/** Entry point of the notification service process: `node dist/services/notification/main.js`. */
import { displayHost, runService } from '../../shared/runtime/run-service';
import { loadNotificationConfig } from './config';
import { createNotificationApp } from './app';

runService({
  name: 'notification',
  loadConfig: () => loadNotificationConfig(),
  async start(config, logger) {
    const app = await createNotificationApp(config, logger);
    const ports = await app.start();
    if (app.auth.demoMode) {
      // No admin keys configured (never in production): a ready link for the demo user.
      const link = await app.auth.demoLoginUrl(`http://${displayHost(config.server.host)}:${ports.http}`);
      logger.info({ user: config.admin.auth.demo_user }, `admin page (demo login, valid 12 h): ${link}`);
    }
    return { ports, stop: () => app.stop() };
  },
});
