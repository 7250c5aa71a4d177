/**
 * `MonitorModule` and `MonitorProvider`: what a service builds once at start so application code can
 * always obtain a metrics collector, a tracer and a health checker registry. `MonitorProvider.current()`
 * answers with the provider built last, or with a stub of no-op collector and tracer when none was
 * built, so library code never has to check. The provider also becomes the process tracer of the
 * instrumentation helpers (`traced`, `tracePublish`, ...), and `shutdown()` cleans the health
 * registry up and flushes the tracer.
 *
 * Hooks for the alerts and SLO areas: `alertDispatcher` (an `AlertDispatcherProtocol`; the alerts
 * area's logging dispatcher is to be the default through `MonitorProvider.defaultAlertDispatcher`) and
 * `withSlo`'s `createSloMonitor`.
 */
import type { Registry } from 'prom-client';
import { type Logger, silentLogger } from '../logging/logger';
import { type MetricsBackend, NoopMetricsBackend } from './backends/backend';
import { createMetricsCollector, type MetricsCollector, NoopMetricsCollector } from './collector';
import type { HealthConfig, MetricsConfig, OpenTelemetrySectionConfig, TracingConfig } from './config';
import { TracingExporterRegistry } from './exporters';
import { HealthCheckerRegistry } from './health/registry';
import { getGlobalTracer, setGlobalTracer } from './tracing/global';
import { NoopTracer, Tracer, type TracerProtocol } from './tracing/tracer';

/** The two operations of the spec's `AlertDispatcherProtocol` (the alerts area implements it). */
export interface AlertDispatcherLike {
  sendAlert(
    title: string,
    message: string,
    severity: string,
    context?: Record<string, unknown> | null,
  ): Promise<void>;
  sendMetricAlert(
    metricName: string,
    currentValue: number,
    threshold: number,
    context?: Record<string, unknown> | null,
  ): Promise<void>;
}

/** The parts of a service's config the provider reads; every section is optional. */
export interface MonitorModuleConfig {
  name?: string;
  metrics?: Partial<MetricsConfig>;
  tracing?: Partial<TracingConfig>;
  health?: Partial<HealthConfig>;
  opentelemetry?: Partial<OpenTelemetrySectionConfig>;
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
}

/** The collector, tracer, health registry and alert dispatcher of a service. */
export class MonitorProvider {
  /**
   * Builds the default alert dispatcher when none is given: set by the alerts area (the logging
   * dispatcher of the spec); null until then.
   */
  static defaultAlertDispatcher: ((logger: Logger) => AlertDispatcherLike) | null = null;
  private static registered: MonitorProvider | undefined;
  private static fallback: MonitorProvider | undefined;
  private closed = false;

  private constructor(
    readonly name: string,
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
      context.backend ?? new NoopMetricsBackend(),
      createMetricsCollector(config.metrics, context.registry),
      tracer,
      new HealthCheckerRegistry({ logger }),
      alertDispatcher,
    );
    if (context.register !== false) provider.register();
    return provider;
  }

  /** No-op metrics and tracing, a local health registry; nothing is connected externally. */
  static stub(config: MonitorModuleConfig = {}, register = true): MonitorProvider {
    const provider = new MonitorProvider(
      config.name ?? 'monitor',
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

/** Options of `withSlo`: how to build the SLO monitor (the SLO area's `SLOMonitor`) on the provider. */
export interface WithSloOptions<S> {
  createSloMonitor(provider: MonitorProvider): S;
}

/** The spec's module entry points. */
export const MonitorModule = {
  /** A provider on `backend` (default: the no-op metrics backend) from `config`. */
  configure(backend?: MetricsBackend | null, config?: MonitorModuleConfig, context: MonitorContext = {}) {
    return MonitorProvider.fromConfig(config, { ...context, backend: backend ?? new NoopMetricsBackend() });
  },
  /** `configure` plus an SLO monitor built by the SLO area's factory. */
  withSlo<S>(
    options: WithSloOptions<S>,
    backend?: MetricsBackend | null,
    config?: MonitorModuleConfig,
    context: MonitorContext = {},
  ): { provider: MonitorProvider; slo: S } {
    const provider = MonitorModule.configure(backend, config, context);
    return { provider, slo: options.createSloMonitor(provider) };
  },
  /** No-op metrics and tracing; nothing is connected externally. */
  stub(config?: MonitorModuleConfig): MonitorProvider {
    return MonitorProvider.stub(config);
  },
};
