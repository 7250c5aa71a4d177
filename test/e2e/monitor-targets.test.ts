/**
 * The real monitor process watching the real notification process: killing the notification process
 * raises one "down" alert and flips `up{target}` to 0 on its /metrics; the notification process
 * started again on the same ports raises one "recovered" and flips it back to 1. The alerts are
 * counted where the monitor's channels deliver them: its log (JSON lines of a `log` channel) and a
 * local webhook server (a `webhook` channel: one POST per alert, the proto `Alert` as JSON).
 */
import { listen, type TestServer } from '../shared/monitoring/helpers';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';

const NOTIFICATION_ENV = {
  SVC_NOTIFICATION__INBOX__STORE_BACKEND: 'memory',
  SVC_NOTIFICATION__DELIVERY__STORE_BACKEND: 'memory',
};

interface AlertLine {
  event: string;
  alert: string;
  severity: string;
  context: { target?: string; state?: string; consecutive_failures?: number };
}

/** The webhook body: the proto `Alert` in its JSON mapping (services/monitor/alerts/README.md). */
interface WebhookAlert {
  alertName: string;
  title: string;
  severity: string;
  context: Record<string, string>;
}

/** A local webhook receiver keeping every alert posted to it, in order. */
async function webhookReceiver(): Promise<{ server: TestServer; alerts: WebhookAlert[] }> {
  const alerts: WebhookAlert[] = [];
  const server = await listen((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      alerts.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as WebhookAlert);
      res.writeHead(204).end();
    });
  });
  return { server, alerts };
}

function alertLines(proc: ServiceProcess): AlertLine[] {
  const out: AlertLine[] = [];
  for (const line of proc.logs) {
    try {
      const rec = JSON.parse(line) as AlertLine;
      if (rec.event === 'alert' && rec.context?.target === 'notification') out.push(rec);
    } catch {
      // not a JSON line
    }
  }
  return out;
}

async function until<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  ms = 60_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('the monitor process watching the notification process', () => {
  let notification: ServiceProcess | undefined;
  let monitor: ServiceProcess | undefined;
  let webhook: { server: TestServer; alerts: WebhookAlert[] } | undefined;

  afterAll(async () => {
    await monitor?.stop();
    await notification?.stop();
    await webhook?.server.close();
  });
  const hooked = () => webhook!.alerts.filter((a) => a.context.target === 'notification');

  async function scrape(): Promise<{ up?: string; grpcProbes: number }> {
    const text = await (await fetch(`http://127.0.0.1:${monitor!.httpPort}/metrics`)).text();
    const up = /^\w*up\{target="notification"\} (\S+)$/m.exec(text)?.[1];
    const count =
      /target_probe_duration_seconds_count\{[^}]*target="notification",kind="grpc"[^}]*\} (\d+)/.exec(text);
    return { up, grpcProbes: Number(count?.[1] ?? 0) };
  }

  it('alerts once when it is killed and once when it is back on the same ports', async () => {
    notification = await startServiceProcess('notification', NOTIFICATION_ENV);
    const { grpcPort, httpPort } = notification;
    webhook = await webhookReceiver();
    monitor = await startServiceProcess('monitor', {
      SVC_MONITOR__ALERTS__CHANNELS: JSON.stringify([
        { name: 'log', type: 'log' },
        { name: 'hook', type: 'webhook', webhook: { url: `${webhook.server.url}/alerts` } },
      ]),
      SVC_MONITOR__TARGETS: JSON.stringify([
        {
          name: 'notification',
          grpc_address: `127.0.0.1:${grpcPort}`,
          http_url: `http://127.0.0.1:${httpPort}/health/ready`,
          interval_seconds: 0.2,
          timeout_ms: 5000,
        },
      ]),
    });
    await until('up 1', async () => ((await scrape()).up === '1' ? true : undefined));

    await notification.stop('SIGKILL');
    const down = await until('the down alert', () => alertLines(monitor!)[0]);
    expect(down).toMatchObject({ alert: 'target notification is down', severity: 'high' });
    expect(down.context).toMatchObject({ state: 'down', consecutive_failures: 2 });
    expect((await scrape()).up).toBe('0');

    notification = await startServiceProcess('notification', {
      ...NOTIFICATION_ENV,
      SVC_NOTIFICATION__SERVER__GRPC_PORT: String(grpcPort),
      SVC_NOTIFICATION__SERVER__HTTP_PORT: String(httpPort),
    });
    expect([notification.grpcPort, notification.httpPort]).toEqual([grpcPort, httpPort]);
    await until('the recovered alert', () => alertLines(monitor!)[1]);
    const probesAtRecovery = (await scrape()).grpcProbes;
    // A few more probes of the healthy target, then count: one alert per change, not one per probe.
    await until('three more probes', async () =>
      (await scrape()).grpcProbes >= probesAtRecovery + 3 ? true : undefined,
    );
    expect(alertLines(monitor).map((a) => a.context.state)).toEqual(['down', 'recovered']);
    // The same two alerts at the webhook, in order, and no more (the counts above were taken after
    // three more healthy probes, so a late extra alert would show here too).
    await until('both alerts at the webhook', () => (hooked().length >= 2 ? true : undefined));
    expect(hooked().map((a) => [a.title, a.severity, a.context.state])).toEqual([
      ['target notification is down', 'high', 'down'],
      ['target notification recovered', 'low', 'recovered'],
    ]);
    expect(alertLines(monitor)[1]).toMatchObject({ alert: 'target notification recovered', severity: 'low' });
    expect((await scrape()).up).toBe('1');
  });
});
