/**
 * Error tracking (`setupErrorTracking`): exceptions and messages reported to an external
 * error-tracking service through Sentry's SDK, or only logged locally when no DSN is configured.
 *
 * We use `@sentry/node-core` and build a `NodeClient` with its own `Scope` instead of calling
 * `Sentry.init`: no OpenTelemetry setup is installed beside ours, no global hub or process-wide
 * integration (uncaught-exception handlers, console patching) is touched, and two trackers in one
 * process (tests) do not share state. The SDK is loaded only when a DSN is set, so a service without
 * error tracking never loads it. The DSN is a secret: it is never logged or put in an error.
 */
import type * as SentryNodeCore from '@sentry/node-core';
import type { NodeClient, Scope, SeverityLevel } from '@sentry/node-core';
import { type Logger, silentLogger } from '../../logging/logger';
import { type ErrorTrackingConfig, isValidDsn } from '../config';
import { BackendNotAvailableError, MonitoringConfigError } from '../errors';

/** Default seconds `flush` waits for pending events (spec: flush timeout 2.0). */
export const DEFAULT_FLUSH_TIMEOUT = 2.0;

/** The Sentry SDK module. */
export type SentryModule = typeof SentryNodeCore;

/** Returns the error-tracking client library, or undefined when it is not installed. */
export type SentryLoader = () => SentryModule | undefined;

/** Loads `@sentry/node-core` with `require`, answering undefined when it cannot be resolved. */
export const loadSentry: SentryLoader = () => {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require('@sentry/node-core') as SentryModule;
  } catch {
    return undefined;
  }
};

/** A loader that reports the library as absent. */
export const absentSentry: SentryLoader = () => undefined;

/** Extra data attached to one captured event. */
export interface CaptureContext {
  /** Searchable tags. */
  tags?: Record<string, string>;
  /** Free-form extra data. */
  extra?: Record<string, unknown>;
}

/** What application code reports errors through (`ErrorTrackerProtocol`). */
export interface ErrorTrackerProtocol {
  /** True when events leave the process. */
  readonly active: boolean;
  /** Reports an exception; returns the event id when one is sent. */
  captureException(exception: unknown, context?: CaptureContext): string | undefined;
  /** Reports a message at `level` (`info` by default). */
  captureMessage(message: string, level?: SeverityLevel, context?: CaptureContext): string | undefined;
  /** Waits up to `timeout` seconds for pending events; false when some were still pending. */
  flush(timeout?: number): Promise<boolean>;
  /** Flushes, then releases the client (listeners, timers). The tracker captures nothing afterwards. */
  close(timeout?: number): Promise<boolean>;
}

/** Logs exceptions locally; nothing leaves the process and there is nothing to flush. */
export class NoopErrorTracker implements ErrorTrackerProtocol {
  readonly active = false;

  constructor(private readonly logger: Logger = silentLogger()) {}

  captureException(exception: unknown, context?: CaptureContext): undefined {
    this.logger.error({ err: exception, ...context?.tags }, 'exception captured (error tracking off)');
    return undefined;
  }

  captureMessage(message: string, level: SeverityLevel = 'info', context?: CaptureContext): undefined {
    this.logger.info({ level, ...context?.tags }, `message captured (error tracking off): ${message}`);
    return undefined;
  }

  async flush(_timeout: number = DEFAULT_FLUSH_TIMEOUT): Promise<boolean> {
    return true;
  }

  async close(_timeout: number = DEFAULT_FLUSH_TIMEOUT): Promise<boolean> {
    return true;
  }
}

/** Options of setupErrorTracking beyond the config section. */
export interface ErrorTrackingOptions {
  logger?: Logger;
  /** Used when `config.environment` is empty (the service's `environment`). */
  defaultEnvironment?: string;
  /** Release tag (for example the service version). */
  release?: string;
  /** How the SDK is loaded (tests pass {@link absentSentry}). */
  loader?: SentryLoader;
}

/** Reports to the DSN's host through a private Sentry NodeClient. */
export class SentryErrorTracker implements ErrorTrackerProtocol {
  readonly active = true;
  private readonly client: NodeClient;
  private readonly scope: Scope;
  private closed = false;

  constructor(config: ErrorTrackingConfig, options: ErrorTrackingOptions = {}) {
    const dsn = config.dsn.trim();
    if (!isValidDsn(dsn)) {
      throw new MonitoringConfigError('error_tracking.dsn is not a valid DSN');
    }
    const sdk = (options.loader ?? loadSentry)();
    if (!sdk) throw new BackendNotAvailableError('error tracking needs @sentry/node-core');
    const { NodeClient, Scope, defaultStackParser, makeNodeTransport } = sdk;
    this.client = new NodeClient({
      dsn,
      environment: config.environment || options.defaultEnvironment || 'production',
      release: options.release,
      tracesSampleRate: config.traces_sample_rate,
      sendDefaultPii: config.send_default_pii,
      // The host name identifies a machine: sent only when personal data may be sent.
      includeServerName: config.send_default_pii,
      // No default integrations: they would patch process-wide handlers, which are the service's.
      integrations: [],
      transport: makeNodeTransport,
      stackParser: defaultStackParser,
      sendClientReports: false,
    });
    this.client.init();
    this.scope = new Scope();
    this.scope.setClient(this.client);
  }

  /** The SDK options in effect that come from the config (for inspection). */
  get settings(): { environment?: string; tracesSampleRate?: number; sendDefaultPii?: boolean } {
    const o = this.client.getOptions();
    return {
      environment: o.environment,
      tracesSampleRate: o.tracesSampleRate,
      sendDefaultPii: o.sendDefaultPii,
    };
  }

  captureException(exception: unknown, context?: CaptureContext): string | undefined {
    if (this.closed) return undefined;
    return this.scope.captureException(exception, { captureContext: toScopeContext(context) });
  }

  captureMessage(
    message: string,
    level: SeverityLevel = 'info',
    context?: CaptureContext,
  ): string | undefined {
    if (this.closed) return undefined;
    return this.scope.captureMessage(message, level, { captureContext: toScopeContext(context) });
  }

  async flush(timeout: number = DEFAULT_FLUSH_TIMEOUT): Promise<boolean> {
    return this.client.flush(Math.max(0, timeout) * 1000);
  }

  async close(timeout: number = DEFAULT_FLUSH_TIMEOUT): Promise<boolean> {
    if (this.closed) return true;
    this.closed = true;
    return this.client.close(Math.max(0, timeout) * 1000);
  }
}

function toScopeContext(
  context: CaptureContext | undefined,
): { tags?: Record<string, string>; extra?: Record<string, unknown> } | undefined {
  if (!context) return undefined;
  return {
    ...(context.tags ? { tags: context.tags } : {}),
    ...(context.extra ? { extra: context.extra } : {}),
  };
}

/**
 * The tracker for a config section: the no-op tracker when `dsn` is unset or blank, the Sentry
 * tracker otherwise. Logs which one it chose, never the DSN.
 */
export function setupErrorTracking(
  config: Partial<ErrorTrackingConfig> = {},
  options: ErrorTrackingOptions = {},
): ErrorTrackerProtocol {
  const logger = options.logger ?? silentLogger();
  const dsn = (config.dsn ?? '').trim();
  if (dsn === '') {
    logger.debug('error tracking off: no DSN');
    return new NoopErrorTracker(logger);
  }
  const full: ErrorTrackingConfig = {
    dsn,
    environment: config.environment ?? '',
    traces_sample_rate: config.traces_sample_rate ?? 0,
    send_default_pii: config.send_default_pii ?? false,
  };
  if (!(options.loader ?? loadSentry)()) {
    logger.warn('error tracking off: a DSN is set but @sentry/node-core is not installed');
    return new NoopErrorTracker(logger);
  }
  const tracker = new SentryErrorTracker(full, options);
  logger.info(
    {
      environment: full.environment || options.defaultEnvironment,
      traces_sample_rate: full.traces_sample_rate,
    },
    'error tracking on',
  );
  return tracker;
}
