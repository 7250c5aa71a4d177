/**
 * The life of a service process: load config, start, report where it listens, shut down gracefully
 * on SIGTERM/SIGINT (a second signal, a second or more after the first, exits at once), and never
 * die silently.
 */
import { ConfigError, differingKeys, outputForcedInteractive, redactSecrets } from '../config';
import { createLogger, type LogFormat, type Logger } from '../logging/logger';
import type * as TelemetryModule from './telemetry';
import type { Telemetry, TelemetryConfig } from './telemetry';

/**
 * A repeat of the stop signal within this long of the first is the same Ctrl-C delivered twice (see
 * onSignal), not a request to exit at once.
 */
const DUPLICATE_SIGNAL_MS = 1000;

export interface RunningService {
  /** The ports actually bound. */
  ports: { grpc: number; http: number };
  stop(): Promise<void>;
}

/** What a service's config must have for the runner. */
export interface RunnableConfig {
  log: { level: string; format: LogFormat };
  server: { host: string };
}

export interface ServiceDefinition<C extends RunnableConfig> {
  name: string;
  loadConfig(): C;
  /**
   * The configuration with nothing set (no file, no environment): the start line logs only the keys
   * that differ from it, and the whole configuration at debug. Absent: the whole at info.
   */
  defaultConfig?(): C;
  /**
   * The service's tracing sections. When given, the OpenTelemetry SDK starts (if they enable it)
   * before `start` runs, so `start` must be what first requires `@grpc/grpc-js`: a `main` requires
   * its composition root inside `start`, never at the top.
   */
  telemetry?(config: C): TelemetryConfig;
  start(config: C, logger: Logger): Promise<RunningService>;
}

/** The host to show people: a wildcard bind address is reachable as localhost. */
export function displayHost(host: string): string {
  return host === '0.0.0.0' || host === '::' ? 'localhost' : host;
}

/** Runs a service until a termination signal; exit code 0 after a clean shutdown. */
export function runService<C extends RunnableConfig>(def: ServiceDefinition<C>): void {
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
  const logger = createLogger({
    name: def.name,
    level: config.log.level,
    format: config.log.format,
    interactive: process.stdout.isTTY === true || outputForcedInteractive(),
  });
  // The logger writes synchronously (see createLogger), so every line is out before the exit.
  const exit = (code: number): void => {
    process.exit(code);
  };
  process.on('uncaughtException', (err) => {
    logger.fatal({ err }, 'uncaught exception; exiting');
    process.exit(1);
  });
  process.on('unhandledRejection', (err) => {
    logger.fatal({ err }, 'unhandled promise rejection; exiting');
    process.exit(1);
  });

  // Signal handlers go in before anything starts: a SIGTERM that arrives while the database opens
  // (PGlite's first start takes seconds) or right after the ports open still stops the service
  // cleanly, once it has started, instead of killing it halfway through writing its data directory.
  let service: RunningService | undefined;
  let telemetry: Telemetry | null = null;
  let stopping = false;
  const stop = (running: RunningService): void => {
    // Exporters are flushed last, so the spans of the shutdown itself are sent too.
    running
      .stop()
      .then(() => telemetry?.shutdown())
      .then(
        () => {
          logger.info('stopped');
          exit(0);
        },
        (err: unknown) => {
          logger.error({ err }, 'error during shutdown');
          exit(1);
        },
      );
  };
  let firstSignalAt = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      // One Ctrl-C under `npm start` arrives twice: the terminal signals the whole process group,
      // and concurrently forwards the same signal to its children a moment later. Only a signal
      // after DUPLICATE_SIGNAL_MS is someone asking again, to skip the graceful shutdown.
      if (Date.now() - firstSignalAt < DUPLICATE_SIGNAL_MS) return;
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    firstSignalAt = Date.now();
    logger.info({ signal }, service ? 'shutting down' : 'shutting down once started');
    if (service) stop(service);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  void (async () => {
    try {
      const defaults = defaultsOf(def);
      if (defaults === undefined) logger.info({ config: redactSecrets(config) }, 'effective configuration');
      else {
        logger.info(
          { config: redactSecrets(differingKeys(config, defaults)) },
          'effective configuration (keys set away from the defaults; all of it at log.level debug)',
        );
        logger.debug({ config: redactSecrets(config) }, 'effective configuration (all keys)');
      }
      if (def.telemetry) {
        // Required here, not imported at the top: the SDK (hundreds of modules) loads only when a
        // service has tracing sections.
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const { startTelemetry } = require('./telemetry') as typeof TelemetryModule;
        telemetry = startTelemetry(def.telemetry(config), logger);
      }
      service = await def.start(config, logger);
    } catch (err) {
      logger.fatal({ err }, 'failed to start');
      exit(1);
      return;
    }
    const host = displayHost(config.server.host);
    logger.info(
      `${def.name} ready: gRPC ${host}:${service.ports.grpc}, HTTP http://${host}:${service.ports.http}`,
    );
    if (stopping) stop(service);
  })();
}

/** The definition's default configuration, or undefined when it has none or it cannot be built. */
function defaultsOf<C extends RunnableConfig>(def: ServiceDefinition<C>): C | undefined {
  try {
    return def.defaultConfig?.();
  } catch {
    // Defaults that do not load on their own (a key required in every environment) only cost the
    // short start line: the whole configuration is logged instead.
    return undefined;
  }
}
