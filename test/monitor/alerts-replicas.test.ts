/**
 * Two monitor processes (dist, real ports) on one PostgreSQL share the alert lifecycle (issue 27):
 * grouping on `service` with a local webhook standing in for the pager. 200 alerts of one outage sent
 * half to each process make one group notification; either replica answers reads and a silence made
 * on one mutes alerts triggered on the other; acknowledging on one stops the repeats of both; and the
 * replica holding a group is killed with SIGKILL before the group is due: the other sends it, once.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { AlertService, MatchOperator } from '../../shared/gen/svc/monitor/v1/alerts_pb';
import { AlertState, MonitorService } from '../../shared/gen/svc/monitor/v1/monitor_pb';
import { createTestDatabase } from '../support/database';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';
import { listen, type TestServer } from '../shared/monitoring/helpers';
import { waitFor } from '../support/wait';

jest.setTimeout(240_000);

const P0 = { tier: 'P0_PAGE' };
const REPEAT_S = 6;

interface Delivery {
  title: string;
  service: string;
  count: number;
}

/** A request the webhook holds without answering (the pager hangs), with the replica that sent it. */
let hangNext: ((service: string) => boolean) | undefined;
const hung: Array<{ replica: string; service: string }> = [];

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let hook: TestServer;
const delivered: Delivery[] = [];
const procs = new Map<string, ServiceProcess>();
const clients = new Map<
  string,
  { monitor: Client<typeof MonitorService>; alerts: Client<typeof AlertService> }
>();

const toService = (service: string) => delivered.filter((d) => d.service === service);
const eq = (name: string, value: string) => ({ name, operator: MatchOperator.EQUAL, value });

beforeAll(async () => {
  db = await createTestDatabase('mon_alert_replicas');
  hook = await listen((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        title: string;
        context?: Record<string, string>;
      };
      const service = body.context?.service ?? '';
      if (hangNext?.(service)) {
        hangNext = undefined;
        hung.push({ replica: String(req.url).split('/').pop()!, service });
        return; // never answered
      }
      delivered.push({ title: body.title, service, count: Number(body.context?.alert_count ?? 0) });
      res.end('ok');
    });
  });
  for (const name of ['a', 'b']) await startReplica(name);
});

async function startReplica(name: string): Promise<void> {
  const proc = await startServiceProcess(
    'monitor',
    {
      SVC_MONITOR__DATABASE__URL: db.url,
      // Each replica posts to a path of its own, so the webhook knows who sent.
      SVC_MONITOR__ALERTS__CHANNELS: JSON.stringify([
        { name: 'hook', type: 'webhook', webhook: { url: `${hook.url}/pager/${name}`, timeout_ms: 60_000 } },
      ]),
      SVC_MONITOR__ALERTS__GROUPING__GROUP_BY: '["service"]',
      SVC_MONITOR__ALERTS__GROUPING__GROUP_WAIT_SECONDS: '3',
      SVC_MONITOR__ALERTS__GROUPING__GROUP_INTERVAL_SECONDS: '3',
      SVC_MONITOR__ALERTS__GROUPING__REPEAT_INTERVAL_SECONDS: String(REPEAT_S),
    },
    { startTimeoutMs: 180_000 },
  );
  procs.set(name, proc);
  const transport = createConnectTransport({
    baseUrl: `http://127.0.0.1:${proc.httpPort}`,
    httpVersion: '1.1',
  });
  clients.set(name, {
    monitor: createClient(MonitorService, transport),
    alerts: createClient(AlertService, transport),
  });
}
afterAll(async () => {
  for (const p of procs.values()) await p.stop('SIGKILL', 1000);
  await hook?.close();
  await db?.drop();
});

const client = (name: string) => clients.get(name)!;

it('200 alerts of one outage sent half to each replica make exactly one group notification', async () => {
  const ids = await Promise.all(
    [...Array(200).keys()].map(async (i) => {
      const r = await client(i % 2 ? 'a' : 'b').monitor.sendAlert({
        title: `checkout pod ${i} unreachable`,
        severity: 'critical',
        context: { ...P0, service: 'checkout' },
      });
      return r.alertId;
    }),
  );
  expect(new Set(ids).size).toBe(200);
  await waitFor(() => toService('checkout').length >= 1, 'the group notification', 60_000);
  // Both replicas flush the group (group_interval 3 s) within the repeat interval: still one.
  await sleep(REPEAT_S * 500);
  expect(toService('checkout')).toEqual([
    { title: '[FIRING:200] service=checkout', service: 'checkout', count: 200 },
  ]);
});

it('either replica answers reads; a silence made on one mutes alerts triggered on the other', async () => {
  const sent = await client('a').monitor.sendAlert({
    title: 'search index stale',
    message: '索引 🔍 فهرس',
    severity: 'high',
    context: { ...P0, service: 'search' },
    dedupKey: 'search-stale',
  });
  const got = (await client('b').alerts.getAlert({ alertId: sent.alertId })).alert!;
  expect(got).toMatchObject({ state: AlertState.TRIGGERED, dedupKey: 'search-stale' });
  expect(got.alert!.message).toBe('索引 🔍 فهرس');
  const listed = await client('b').alerts.listAlerts({ matchers: [eq('service', 'search')] });
  expect(listed.alerts.map((x) => x.alert!.id)).toEqual([sent.alertId]);
  // The dedup key is shared too: the same key on the other replica updates the same alert.
  const again = await client('b').monitor.sendAlert({
    title: 'search index stale',
    severity: 'high',
    context: { ...P0, service: 'search' },
    dedupKey: 'search-stale',
  });
  expect(again).toMatchObject({ alertId: sent.alertId, opened: false });

  const silence = await client('b').alerts.createSilence({
    matchers: [eq('service', 'billing')],
    endsAt: timestampFromMs(Date.now() + 3_600_000),
    createdBy: 'ops',
    comment: 'billing migration',
  });
  expect((await client('a').alerts.listSilences({})).silences.map((s) => s.id)).toContain(
    silence.silence!.id,
  );
  const muted = await client('a').monitor.sendAlert({
    title: 'billing slow',
    severity: 'critical',
    context: { ...P0, service: 'billing' },
  });
  expect((await client('a').alerts.getAlert({ alertId: muted.alertId })).alert!.silencedBy).toBe(
    silence.silence!.id,
  );
  await sleep(5000); // group_wait and a tick or two of both replicas
  expect(toService('billing')).toEqual([]);
});

it('acknowledging on one replica stops the repeats of both', async () => {
  const sent = await client('a').monitor.sendAlert({
    title: 'queue backlog',
    severity: 'critical',
    context: { ...P0, service: 'queue' },
  });
  // The first notification, then at least one repeat (repeat_interval 6 s).
  await waitFor(() => toService('queue').length >= 2, 'a repeat of the queue group', 60_000);
  await client('b').alerts.acknowledgeAlert({ alertId: sent.alertId, acknowledgedBy: 'kenji' });
  const before = toService('queue').length;
  await sleep(REPEAT_S * 2500);
  expect(toService('queue').length).toBe(before);
});

it('the replica holding a group is killed before the group is due: the other sends it, once', async () => {
  const sent = await Promise.all(
    [...Array(10).keys()].map((i) =>
      client('a').monitor.sendAlert({
        title: `payments worker ${i} down`,
        severity: 'critical',
        context: { ...P0, service: 'payments' },
      }),
    ),
  );
  expect(sent).toHaveLength(10);
  expect(await procs.get('a')!.stop('SIGKILL')).toBeNull();
  procs.delete('a');
  await waitFor(() => toService('payments').length >= 1, 'the payments group from the survivor', 60_000);
  await sleep(REPEAT_S * 500);
  expect(toService('payments')).toEqual([
    { title: '[FIRING:10] service=payments', service: 'payments', count: 10 },
  ]);
});

it('the replica sending a group is killed while the webhook holds its request: the other sends the group (when the lease of its claim or the repeat period runs out), once', async () => {
  await startReplica('c');
  hangNext = (service) => service === 'orders';
  await Promise.all(
    [...Array(6).keys()].map((i) =>
      client(i % 2 ? 'b' : 'c').monitor.sendAlert({
        title: `orders shard ${i} read-only`,
        severity: 'critical',
        context: { ...P0, service: 'orders' },
      }),
    ),
  );
  await waitFor(() => hung.length === 1, 'the hung group request', 60_000);
  const sender = hung[0]!.replica;
  const survivor = sender === 'b' ? 'c' : 'b';
  expect(await procs.get(sender)!.stop('SIGKILL')).toBeNull();
  procs.delete(sender);
  // The notification log row of the killed sender stays `sending` (it is marked sent only once the
  // channels are through) with a 60 s lease on the database's clock; the survivor tries again at
  // each group_interval and sends when the lease has run out or the next repeat period (6 s) began,
  // whichever comes first. The held request was never answered: nothing reached the pager twice.
  await waitFor(() => toService('orders').length >= 1, 'the orders group from the survivor', 150_000);
  await sleep(REPEAT_S * 500);
  expect(toService('orders')).toEqual([{ title: '[FIRING:6] service=orders', service: 'orders', count: 6 }]);
  const detail = await client(survivor).alerts.listAlerts({ matchers: [eq('service', 'orders')] });
  expect(detail.alerts).toHaveLength(6);
});
