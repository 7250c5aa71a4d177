/**
 * Every RPC of each proto service has its handler on the class that implements it: the classes
 * implement the whole `ServiceImpl` (the typecheck refuses a forgotten one), and this test says the
 * same at run time, so a handler removed from a class is caught by the test run too.
 */
import type { DescService } from '@bufbuild/protobuf';
import { InboxService } from '../../../shared/gen/svc/notification/v1/inbox_pb';
import { NotificationService } from '../../../shared/gen/svc/notification/v1/notification_pb';
import { InboxRpc } from '../../../services/notification/rpc/inbox-rpc';
import { NotificationRpc } from '../../../services/notification/rpc/notification-rpc';

const cases: Array<[string, DescService, object]> = [
  ['NotificationRpc', NotificationService, NotificationRpc.prototype],
  ['InboxRpc', InboxService, InboxRpc.prototype],
];

describe.each(cases)('%s', (_name, service, prototype) => {
  it.each(service.methods.map((m) => [m.name, m.localName]))('has a handler for %s', (_rpc, localName) => {
    expect(typeof (prototype as Record<string, unknown>)[localName]).toBe('function');
  });
});
