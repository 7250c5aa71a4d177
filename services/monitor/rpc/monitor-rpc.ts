/**
 * The MonitorService RPCs (gRPC and Connect): translate wire messages to calls on the monitor's
 * areas (ingest/, traces/, targets/, web/) and the monitoring library (SLOMonitor, dispatchers),
 * and back. No business rules here.
 *
 * Methods not built yet are simply absent: the RPC kit answers them UNIMPLEMENTED. The monitor
 * issue adds each one here as a method named after the RPC (`recordMetrics`, `exportSpans`, ...),
 * and the areas it calls as constructor parameters, like notification's InboxRpc.
 */
import type { ServiceImpl } from '@connectrpc/connect';
import type { MonitorService } from '../../../shared/gen/svc/monitor/v1/monitor_pb';

/** MonitorService implementation (no RPC built yet). */
export class MonitorRpc implements Partial<ServiceImpl<typeof MonitorService>> {}
