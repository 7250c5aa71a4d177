/**
 * The RPC surfaces of the two processes, as the reliability suites walk them: every service each
 * process registers, from the generated descriptors. Suites enumerate `methods` from here, so a new
 * RPC is covered by the fuzzer, the auth check and the interop check without anyone remembering to.
 * A test (surfaces.test.ts) checks this list against what the running processes answer through
 * reflection, so it cannot drift from the apps' registrations.
 */
import type { DescMethod, DescService } from '@bufbuild/protobuf';

import { MetricsService } from '../../shared/gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb';
import { TraceService } from '../../shared/gen/opentelemetry/proto/collector/trace/v1/trace_service_pb';
import { InboundSmsService } from '../../shared/gen/svc/notification/v1/inbound_sms_pb';
import { MonitorService } from '../../shared/gen/svc/monitor/v1/monitor_pb';
import { AlertService } from '../../shared/gen/svc/monitor/v1/alerts_pb';
import { OnCallService } from '../../shared/gen/svc/monitor/v1/oncall_pb';
import { InboxService } from '../../shared/gen/svc/notification/v1/inbox_pb';
import { NotificationService } from '../../shared/gen/svc/notification/v1/notification_pb';
import { UserService } from '../../shared/gen/svc/notification/v1/users_pb';
import { TemplateService } from '../../shared/gen/svc/notification/v1/templates_pb';
import { NotifyService } from '../../shared/gen/svc/notification/v1/notify_pb';

/** Services the notification process serves besides grpc.health.v1 and reflection. */
export const NOTIFICATION_SERVICES: readonly DescService[] = [
  NotificationService,
  InboxService,
  UserService,
  TemplateService,
  NotifyService,
  InboundSmsService,
];

/** Services the monitor process serves besides grpc.health.v1 and reflection. */
export const MONITOR_SERVICES: readonly DescService[] = [
  MonitorService,
  AlertService,
  OnCallService,
  TraceService,
  MetricsService,
];

/**
 * The standard services every process serves besides its own: health (open, for probes) and
 * reflection (it needs an API token when tokens are on, like every RPC).
 */
export const PUBLIC_SERVICES: readonly string[] = [
  'grpc.health.v1.Health',
  'grpc.reflection.v1.ServerReflection',
  'grpc.reflection.v1alpha.ServerReflection',
];

/** Every method of `services`. */
export function methodsOf(services: readonly DescService[]): DescMethod[] {
  return services.flatMap((s) => s.methods);
}
