/**
 * `MonitorModule` and `MonitorProvider`: what a service builds once at start so application code can
 * always obtain a metrics collector, a tracer and a health checker registry. `MonitorProvider.current()`
 * answers with the provider built last, or with a stub of no-op collector and tracer when none was
 * built, so library code never has to check. The provider also becomes the process tracer of the
 * instrumentation helpers (`traced`, `tracePublish`, ...), and `shutdown()` cleans the health
 * registry up and flushes the tracer.
 *
 * Alerts and SLOs: the provider's `alertDispatcher` is the one passed, else the alerts area's logging
 * dispatcher (`MonitorProvider.defaultAlertDispatcher`); `withSlo` builds the SLO area's `SLOMonitor`
 * on that dispatcher, with the `slo` section's bounds.
 */
import type { Registry } from 'prom-client';
import { type Logger, silentLogger } from '../logging/logger';
import { type AlertDispatcherProtocol, LoggingAlertDispatcher } from './alerts/dispatcher';
import { type MetricsBackend, NoopMetricsBackend } from './backends/backend';
import { createMetricsCollector, type MetricsCollector, NoopMetricsCollector } from './collector';
import type { Clock, Timers } from '../runtime/clock';
import type { HealthConfig, MetricsConfig, OpenTelemetrySectionConfig, TracingConfig } from './config';
import { TracingExporterRegistry } from './exporters';
import { HealthCheckerRegistry } from './health/registry';
import { DEFAULT_SLO_CONFIG, type SLOConfig, sloMonitorOptions } from './slo/config';
import { SLOMonitor } from './slo/monitor';
import { getGlobalTracer, setGlobalTracer } from './tracing/global';
import { NoopTracer, Tracer, type TracerProtocol } from './tracing/tracer';

/**
 * The spec's `AlertDispatcherProtocol` (its one home is `alerts/dispatcher.ts`); the name the module
 * used before the alerts area landed.
 */
export type AlertDispatcherLike = AlertDispatcherProtocol;

/** The parts of a service's config the provider reads; every section is optional. */
export interface MonitorModuleConfig {
  name?: string;
  metrics?: Partial<MetricsConfig>;
  tracing?: Partial<TracingConfig>;
  health?: Partial<HealthConfig>;
  opentelemetry?: Partial<OpenTelemetrySectionConfig>;
  /** Bounds of the SLO monitor `withSlo` builds. */
  slo?: Partial<SLOConfig>;
}

/** Infrastructure handed to {@link MonitorProvider.fromConfig} (the spec's `**context`). */
export interface MonitorContext {
  backend?: MetricsBackend;
  /** The process's prom-client registry; a new one otherwise. */
  registry?: Registry;
  logger?: Logger;
  /** Default: {@link MonitorProvider.defaultAlertDispatcher}, when the alerts area has set it. */
  alertDispatcher?: AlertDispatcherLike | null;
  /** false: build the provider without making it `current` and the process tracer (tests). */
  register?: boolean;
  /** Clock and timers of the health checker registry's cache and background refresh (tests). */
  clock?: Clock;
  timers?: Timers;
}

/** The collector, tracer, health registry and alert dispatcher of a service. */
export class MonitorProvider {
  /**
   * Builds the alert dispatcher when none is given: the spec's logging dispatcher on the provider's
   * logger. Null means no dispatcher (alerts are then the caller's concern).
   */
  static defaultAlertDispatcher: ((logger: Logger) => AlertDispatcherLike) | null = (logger) =>
    new LoggingAlertDispatcher(logger);
  private static registered: MonitorProvider | undefined;
  private static fallback: MonitorProvider | undefined;
  private closed = false;

  private constructor(
    readonly name: string,
    readonly logger: Logger,
    readonly backend: MetricsBackend,
    readonly collector: MetricsCollector | NoopMetricsCollector,
    readonly tracer: TracerProtocol,
    readonly healthRegistry: HealthCheckerRegistry,
    readonly alertDispatcher: AlertDispatcherLike | null,
  ) {}

  /**
   * Builds the provider from config: the collector `metrics` asks for (no-op when disabled), a
   * Tracer with `tracing`'s sampler, limits, `max_spans` and exporter (no-op when disabled), and a
   * HealthCheckerRegistry.
   */
  static fromConfig(config: MonitorModuleConfig = {}, context: MonitorContext = {}): MonitorProvider {
    const logger = context.logger ?? silentLogger();
    const name = config.name ?? config.tracing?.service_name ?? 'monitor';
    const tracing = config.tracing ?? {};
    let tracer: TracerProtocol = new NoopTracer();
    if (tracing.enabled !== false) {
      const o = config.opentelemetry ?? {};
      const exporter =
        tracing.exporter && tracing.exporter !== 'none'
          ? TracingExporterRegistry.withDefaults().createExporter({
              type: tracing.exporter,
              endpoint: o.endpoint,
              headers: o.headers,
              timeout: o.timeout,
              compression: o.compression,
            })
          : undefined;
      tracer = new Tracer({
        service_name: tracing.service_name ?? name,
        config: tracing,
        max_spans: tracing.max_spans,
        exporter,
        batch: o,
      });
    }
    const alertDispatcher =
      context.alertDispatcher !== undefined
        ? context.alertDispatcher
        : (MonitorProvider.defaultAlertDispatcher?.(logger) ?? null);
    const provider = new MonitorProvider(
      name,
      logger,
      context.backend ?? new NoopMetricsBackend(),
      createMetricsCollector(config.metrics, context.registry),
      tracer,
      new HealthCheckerRegistry({ logger, clock: context.clock, timers: context.timers }),
      alertDispatcher,
    );
    if (context.register !== false) provider.register();
    return provider;
  }

  /** No-op metrics and tracing, a local health registry; nothing is connected externally. */
  static stub(config: MonitorModuleConfig = {}, register = true): MonitorProvider {
    const provider = new MonitorProvider(
      config.name ?? 'monitor',
      silentLogger(),
      new NoopMetricsBackend(),
      new NoopMetricsCollector(),
      new NoopTracer(),
      new HealthCheckerRegistry(),
      null,
    );
    if (register) provider.register();
    return provider;
  }

  /** The provider built last, or a stub (built once, not registered) when none is. */
  static current(): MonitorProvider {
    return MonitorProvider.registered ?? (MonitorProvider.fallback ??= MonitorProvider.stub({}, false));
  }

  /** Makes this provider `current` and its tracer the process tracer. */
  register(): this {
    MonitorProvider.registered = this;
    setGlobalTracer(this.tracer);
    return this;
  }

  /** Cleans the health registry up, flushes and stops the tracer, stops the backend; idempotent. */
  async shutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.healthRegistry.cleanup();
    if (MonitorProvider.registered === this) {
      MonitorProvider.registered = undefined;
      if (getGlobalTracer() === this.tracer) setGlobalTracer(null);
    }
    await this.tracer.shutdown();
    await this.backend.shutdown();
  }
}

/** Options of `withSlo`: how to build the SLO monitor on the provider (default {@link createSloMonitor}). */
export interface WithSloOptions<S> {
  createSloMonitor(provider: MonitorProvider, config: MonitorModuleConfig): S;
}

/**
 * The SLO area's `SLOMonitor` for a provider: the `slo` section's bounds (defaults when absent), the
 * provider's alert dispatcher (else the logging one the monitor falls back to) and its logger.
 */
export function createSloMonitor(provider: MonitorProvider, config: MonitorModuleConfig = {}): SLOMonitor {
  return new SLOMonitor({
    ...sloMonitorOptions({ ...DEFAULT_SLO_CONFIG, ...config.slo }),
    alertDispatcher: provider.alertDispatcher,
    logger: provider.logger,
  });
}

/** The spec's module entry points. */
export const MonitorModule = {
  /** A provider on `backend` (default: the no-op metrics backend) from `config`. */
  configure(backend?: MetricsBackend | null, config?: MonitorModuleConfig, context: MonitorContext = {}) {
    return MonitorProvider.fromConfig(config, { ...context, backend: backend ?? new NoopMetricsBackend() });
  },
  /** `configure` plus an SLO monitor: `SLOMonitor` ({@link createSloMonitor}) unless a factory is given. */
  withSlo<S = SLOMonitor>(
    options?: WithSloOptions<S> | null,
    backend?: MetricsBackend | null,
    config: MonitorModuleConfig = {},
    context: MonitorContext = {},
  ): { provider: MonitorProvider; slo: S } {
    const provider = MonitorModule.configure(backend, config, context);
    const slo = options ? options.createSloMonitor(provider, config) : createSloMonitor(provider, config);
    return { provider, slo: slo as S };
  },
  /** No-op metrics and tracing; nothing is connected externally. */
  stub(config?: MonitorModuleConfig): MonitorProvider {
    return MonitorProvider.stub(config);
  },
};
