import { Code, ConnectError } from '@connectrpc/connect';
import {
  type CheckHealthResponse,
  HealthCheckCategory,
  HealthStatus,
} from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { unary } from '../../support/grpc-clients';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';

let monitor: RunningMonitorApp;
beforeAll(async () => {
  monitor = await startMonitorApp();
});
afterAll(() => monitor.close());

describe('CheckHealth', () => {
  it('runs every check with no category, over gRPC', async () => {
    const { response: res } = await unary<CheckHealthResponse>(monitor.monitorGrpc, 'CheckHealth', {});
    expect(res.status).toBe(HealthStatus.HEALTHY);
    const names = res.checks.map((c) => c.component);
    expect(names).toEqual(expect.arrayContaining(['process.alive', 'process.started']));
  });

  it('runs only the checks of the category asked for, over Connect', async () => {
    const res = await monitor.monitorConnect.checkHealth({ category: HealthCheckCategory.LIVENESS });
    expect(res.status).toBe(HealthStatus.HEALTHY);
    expect(res.checks.map((c) => c.component)).toEqual(['process.alive']);
    expect(res.checks[0]!.category).toBe(HealthCheckCategory.LIVENESS);
    expect(res.checkedAt).toBeDefined();
  });

  it('refuses a category number it does not know (a client a version ahead) instead of running every check', async () => {
    const err = await monitor.monitorConnect.checkHealth({ category: 99 as HealthCheckCategory }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    expect((err as ConnectError).rawMessage).toContain('unknown category 99');
  });
});
