/**
 * Every RPC of each proto service has its handler on the class that implements it: the classes
 * implement the whole `ServiceImpl` (the typecheck refuses a forgotten one), and this test says the
 * same at run time, so a handler removed from a class is caught by the test run too.
 */
import type { DescService } from '@bufbuild/protobuf';
import { MonitorService } from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { MonitorRpc } from '../../../services/monitor/rpc/monitor-rpc';

const cases: Array<[string, DescService, object]> = [['MonitorRpc', MonitorService, MonitorRpc.prototype]];

describe.each(cases)('%s', (_name, service, prototype) => {
  it.each(service.methods.map((m) => [m.name, m.localName]))('has a handler for %s', (_rpc, localName) => {
    expect(typeof (prototype as Record<string, unknown>)[localName]).toBe('function');
  });
});
