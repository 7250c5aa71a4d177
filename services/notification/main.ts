/**
 * Entry point of the notification service process: `node dist/services/notification/main.js`.
 * The composition root is required inside `start`, after the runner has started tracing: the gRPC
 * instrumentation patches `@grpc/grpc-js` only if it is loaded after the SDK starts.
 */
import { displayHost, runService } from '../../shared/runtime/run-service';
import { loadNotificationConfig } from './config';
import type * as App from './app';

runService({
  name: 'notification',
  loadConfig: () => loadNotificationConfig(),
  defaultConfig: () => loadNotificationConfig(undefined, { env: {}, file: null }),
  telemetry: (config) => config,
  async start(config, logger) {
    // A require here, not an import at the top (see above); the type import is erased.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { createNotificationApp } = require('./app') as typeof App;
    const app = await createNotificationApp(config, logger);
    const ports = await app.start();
    if (app.auth.demoMode) {
      // No admin keys configured (never in production): a ready link for the demo user.
      const base = `http://${displayHost(config.server.host)}:${ports.http}`;
      const link = await app.auth.demoLoginUrl(base);
      logger.info({ user: config.admin.auth.demo_user }, `admin page (demo login, valid 12 h): ${link}`);
      const console = await app.auth.demoConsoleUrl(base);
      logger.info(
        { user: config.admin.auth.demo_user },
        `operator console (demo operator, valid 12 h): ${console}`,
      );
    }
    return { ports, stop: () => app.stop() };
  },
});
