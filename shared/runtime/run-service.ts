/**
 * The life of a service process: load config, start, report where it listens, shut down gracefully
 * on SIGTERM/SIGINT (a second signal exits at once), and never die silently.
 */
import { ConfigError } from '../config';
import { createLogger, type Logger } from '../logging/logger';

export interface RunningService {
  /** Human-readable addresses, printed once the service is ready. */
  describe(): string;
  stop(): Promise<void>;
}

export interface ServiceDefinition<C> {
  name: string;
  loadConfig(): C;
  logLevel(config: C): string;
  start(config: C, logger: Logger): Promise<RunningService>;
}

/** Runs a service until a termination signal; exit code 0 after a clean shutdown. */
export function runService<C>(def: ServiceDefinition<C>): void {
  let config: C;
  try {
    config = def.loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${def.name}: invalid configuration\n${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger({ name: def.name, level: def.logLevel(config) });
  process.on('uncaughtException', (err) => {
    logger.fatal({ err }, 'uncaught exception; exiting');
    process.exit(1);
  });
  process.on('unhandledRejection', (err) => {
    logger.fatal({ err }, 'unhandled promise rejection; exiting');
    process.exit(1);
  });

  void (async () => {
    let service: RunningService;
    try {
      service = await def.start(config, logger);
    } catch (err) {
      logger.fatal({ err }, 'failed to start');
      process.exit(1);
    }
    logger.info(`${def.name} ready: ${service.describe()}`);
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) {
        logger.warn({ signal }, 'second signal: exiting now');
        process.exit(1);
      }
      stopping = true;
      logger.info({ signal }, 'shutting down');
      service.stop().then(
        () => {
          logger.info('stopped');
          process.exit(0);
        },
        (err: unknown) => {
          logger.error({ err }, 'error during shutdown');
          process.exit(1);
        },
      );
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  })();
}
