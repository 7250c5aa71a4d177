/**
 * The alert lifecycle keeps what it knows across a crash (issue 27): a monitor (dist, real gRPC and
 * Connect, the default embedded PGlite in a data directory, a local webhook standing in for the
 * pager) opens an alert with a dedup key, gets another acknowledged, takes a one-off and a recurring
 * silence and records the alerts they mute; it is killed with SIGKILL; a new process on the same data
 * directory finds all of it through AlertService, folds a trigger with the same dedup key into the
 * open alert, and notifies nothing already notified (deliveries counted by alert id at the webhook).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import {
  AlertService,
  MatchOperator,
  SilenceState,
  TimelineEventKind,
} from '../../shared/gen/svc/monitor/v1/alerts_pb';
import { AlertState, MonitorService } from '../../shared/gen/svc/monitor/v1/monitor_pb';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';
import { listen, type TestServer } from '../shared/monitoring/helpers';
import { waitFor } from '../support/wait';

jest.setTimeout(240_000);

const P0 = { tier: 'P0_PAGE' };

let dataDir: string;
let hook: TestServer;
/** Webhook deliveries: the alert id of each POST, in order. */
const delivered: string[] = [];
const procs: ServiceProcess[] = [];

const deliveries = (id: string) => delivered.filter((d) => d === id).length;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'monitor-alerts-durable-'));
  hook = await listen((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      delivered.push(String((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string }).id));
      res.end('ok');
    });
  });
});
afterAll(async () => {
  for (const p of procs) await p.stop('SIGKILL', 1000);
  await hook?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function startMonitor() {
  const proc = await startServiceProcess(
    'monitor',
    {
      SVC_MONITOR__DATABASE__DATA_DIR: dataDir,
      SVC_MONITOR__ALERTS__CHANNELS: JSON.stringify([
        { name: 'hook', type: 'webhook', webhook: { url: `${hook.url}/pager` } },
      ]),
    },
    { startTimeoutMs: 180_000 },
  );
  procs.push(proc);
  const transport = createConnectTransport({
    baseUrl: `http://127.0.0.1:${proc.httpPort}`,
    httpVersion: '1.1',
  });
  return {
    proc,
    monitor: createClient(MonitorService, transport),
    alerts: createClient(AlertService, transport) as Client<typeof AlertService>,
  };
}

const eq = (name: string, value: string) => ({ name, operator: MatchOperator.EQUAL, value });

it('after SIGKILL, a new monitor finds alerts, timelines, acknowledgements and silences; the dedup key updates the open alert; nothing is notified twice', async () => {
  const first = await startMonitor();
  const keyed = await first.monitor.sendAlert({
    title: 'Primary database down',
    message: 'Verbindung verweigert 🔌 連線被拒 الاتصال مرفوض',
    severity: 'critical',
    context: { ...P0, service: 'db' },
    dedupKey: 'db-primary',
  });
  expect(keyed.opened).toBe(true);
  const acked = await first.monitor.sendAlert({
    title: 'Disk almost full',
    severity: 'high',
    context: { ...P0, service: 'storage' },
  });
  await waitFor(
    () => deliveries(keyed.alertId) === 1 && deliveries(acked.alertId) === 1,
    'both alerts at the webhook',
    30_000,
  );
  await first.alerts.acknowledgeAlert({ alertId: acked.alertId, acknowledgedBy: 'ayşe', note: 'on it 👀' });

  const now = Date.now();
  const oneOff = await first.alerts.createSilence({
    matchers: [eq('service', 'maintenance')],
    endsAt: timestampFromMs(now + 3_600_000),
    createdBy: 'ops@example.com',
    comment: 'Wartung 🛠',
  });
  const recurring = await first.alerts.createSilence({
    matchers: [eq('team', 'batch')],
    endsAt: timestampFromMs(now + 7 * 86_400_000),
    createdBy: 'ops',
    comment: 'nightly batch, every day',
    recurrence: {
      days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'],
      start: '00:00',
      end: '23:59',
      timeZone: 'UTC',
    },
  });
  expect(recurring.silence!.state).toBe(SilenceState.ACTIVE);
  const silenced = await first.monitor.sendAlert({
    title: 'Maintenance restart',
    severity: 'critical',
    context: { ...P0, service: 'maintenance' },
  });
  const batch = await first.monitor.sendAlert({
    title: 'Batch job slow',
    severity: 'critical',
    context: { ...P0, team: 'batch' },
  });
  const silencedDetail = await first.alerts.getAlert({ alertId: silenced.alertId });
  expect(silencedDetail.alert!.silencedBy).toBe(oneOff.silence!.id);
  expect(await first.proc.stop('SIGKILL')).toBeNull();

  const second = await startMonitor();
  const a = (await second.alerts.getAlert({ alertId: keyed.alertId })).alert!;
  expect(a).toMatchObject({ state: AlertState.TRIGGERED, dedupKey: 'db-primary', count: 1 });
  expect(a.alert!.message).toBe('Verbindung verweigert 🔌 連線被拒 الاتصال مرفوض');
  expect(a.timeline.map((t) => t.kind)).toEqual([TimelineEventKind.TRIGGERED, TimelineEventKind.NOTIFIED]);
  expect(a.timeline[1]!.actor).toBe('hook (webhook)');

  const b = (await second.alerts.getAlert({ alertId: acked.alertId })).alert!;
  expect(b).toMatchObject({ state: AlertState.ACKNOWLEDGED, acknowledgedBy: 'ayşe' });
  expect(b.timeline.find((t) => t.kind === TimelineEventKind.ACKNOWLEDGED)).toMatchObject({
    actor: 'ayşe',
    detail: 'on it 👀',
  });

  const c = (await second.alerts.getAlert({ alertId: silenced.alertId })).alert!;
  expect(c).toMatchObject({ state: AlertState.TRIGGERED, silencedBy: oneOff.silence!.id });
  expect(c.timeline.map((t) => t.kind)).toEqual([TimelineEventKind.TRIGGERED, TimelineEventKind.SILENCED]);
  const d = (await second.alerts.getAlert({ alertId: batch.alertId })).alert!;
  expect(d.silencedBy).toBe(recurring.silence!.id);

  const ackedList = await second.alerts.listAlerts({ states: [AlertState.ACKNOWLEDGED] });
  expect(ackedList.alerts.map((x) => x.alert!.id)).toEqual([acked.alertId]);
  const maintenance = await second.alerts.listAlerts({ matchers: [eq('service', 'maintenance')] });
  expect(maintenance.alerts.map((x) => x.alert!.id)).toEqual([silenced.alertId]);
  const firing = await second.alerts.listAlerts({ states: [AlertState.TRIGGERED], severities: ['CRITICAL'] });
  expect(firing.alerts.map((x) => x.alert!.id).sort()).toEqual(
    [keyed.alertId, silenced.alertId, batch.alertId].sort(),
  );

  const silences = await second.alerts.listSilences({});
  expect(silences.silences.map((s) => [s.id, s.comment, s.state]).sort()).toEqual(
    [
      [oneOff.silence!.id, 'Wartung 🛠', SilenceState.ACTIVE],
      [recurring.silence!.id, 'nightly batch, every day', SilenceState.ACTIVE],
    ].sort(),
  );
  expect(silences.silences.find((s) => s.id === recurring.silence!.id)!.recurrence).toMatchObject({
    start: '00:00',
    end: '23:59',
    timeZone: 'UTC',
  });

  const again = await second.monitor.sendAlert({
    title: 'Primary database down',
    message: 'still refusing',
    severity: 'critical',
    context: { ...P0, service: 'db' },
    dedupKey: 'db-primary',
  });
  expect(again).toMatchObject({ alertId: keyed.alertId, opened: false });
  const updated = (await second.alerts.getAlert({ alertId: keyed.alertId })).alert!;
  expect(updated.count).toBe(2);
  expect(updated.timeline.at(-1)).toMatchObject({
    kind: TimelineEventKind.UPDATED,
    detail: '#2: still refusing',
  });
  const open = await second.alerts.listAlerts({ matchers: [eq('service', 'db')] });
  expect(open.alerts).toHaveLength(1);

  // Several lifecycle ticks of the new process (1 s each): nothing already notified goes out again,
  // and the silenced alerts stay quiet.
  await sleep(4000);
  expect([keyed, acked, silenced, batch].map((x) => deliveries(x.alertId))).toEqual([1, 1, 0, 0]);
  expect(delivered).toHaveLength(2);
});
