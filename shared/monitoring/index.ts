/**
 * The monitoring library: metrics (instruments, collector, backends, exporters, buffered recorder,
 * `/metrics`), health (checks, checker, registries, `/health`, readiness watch), the event bus,
 * error tracking, profiling and the instrumentation helpers.
 * `/metrics`), health (checks, checker, registries, `/health`, readiness watch), tracing, the
 * instrumentation helpers and the module entry points.
 */
export * from './types';
export * from './config';
export * from './errors';
export * from '../runtime/clock';
export * from './prom-loader';
export * from './metric-names';
export * from './instruments';
export * from './collector';
export * from './exposition';
export * from './exporters';
export * from './buffered-recorder';
export * from './backends/backend';
export * from './backends/pull-metrics';
export * from './migrations';
export * from './backends/opentelemetry';
export * from './health/result';
export * from './health/checks';
export * from './health/checker';
export * from './health/registry';
export * from './health/readiness';
export * from './http/auth';
export * from './http/metrics-middleware';
export * from './http/health-provider';
export * from './alerts/dispatcher';
export * from './alerts/tiers';
export * from './alerts/channels';
export * from './alerts/held-store';
export * from './alerts/tier-dispatcher';
export * from './alerts/config';
export * from './slo/slo';
export * from './slo/ratio';
export * from './slo/period';
export * from './slo/monitor';
export * from './slo/config';
export * from './events/event-bus';
export * from './errors/error-tracking';
export * from './profiling/performance-monitor';
export * from './instrumentation/wrap-callable';
export * from './instrumentation/metered';
export * from './instrumentation/monitor-wrapper';
export * from './tracing';
export * from './instrumentation/traced';
export * from './instrumentation/database';
export * from './instrumentation/messaging';
export * from './instrumentation/observability-service';
export * from './module';
