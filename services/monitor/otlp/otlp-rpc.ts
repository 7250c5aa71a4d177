/**
 * The standard OTLP collector services on the monitor's RPC server:
 * `opentelemetry.proto.collector.trace.v1.TraceService/Export` and
 * `opentelemetry.proto.collector.metrics.v1.MetricsService/Export`. Registered beside
 * MonitorService, so gRPC, Connect and gRPC-Web all reach them, with the same interceptors (auth
 * with `server.api_tokens`, metrics, logging, error mapping), and reflection lists them.
 */
import { create } from '@bufbuild/protobuf';
import {
  ExportMetricsServiceResponseSchema,
  MetricsService,
} from '../../../shared/gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb';
import {
  ExportTraceServiceResponseSchema,
  TraceService,
} from '../../../shared/gen/opentelemetry/proto/collector/trace/v1/trace_service_pb';
import { registration, type ServiceRegistration } from '../../../shared/rpc/server';
import { OTLP_METRICS_METHOD_SCOPES, OTLP_TRACE_METHOD_SCOPES } from '../rpc/scopes';
import type { OtlpReceiver } from './otlp-receiver';

/** The two OTLP services, answering the empty response (everything accepted) on success. */
export function otlpRegistrations(receiver: OtlpReceiver): ServiceRegistration[] {
  return [
    registration(
      TraceService,
      {
        export(request) {
          receiver.exportTraces(request);
          return create(ExportTraceServiceResponseSchema);
        },
      },
      { scopes: OTLP_TRACE_METHOD_SCOPES },
    ),
    registration(
      MetricsService,
      {
        export(request) {
          receiver.exportMetrics(request);
          return create(ExportMetricsServiceResponseSchema);
        },
      },
      { scopes: OTLP_METRICS_METHOD_SCOPES },
    ),
  ];
}
