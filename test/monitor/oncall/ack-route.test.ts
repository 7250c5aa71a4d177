/**
 * `/oncall/ack` over real HTTP (the monitor's route table on a port-0 server): GET shows a form and
 * never acknowledges; POST acknowledges once; forged, expired and malformed tokens get 403 and change
 * nothing; the page's headers forbid caching, referrers and framing.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InMemoryAlertStore } from '../../../services/monitor/alerts/memory-store';
import { MemoryEscalationStore } from '../../../services/monitor/oncall/escalation-store';
import { onCallAckRoutes } from '../../../services/monitor/web/oncall-ack-routes';
import { HttpRouteTable } from '../../../shared/http/routes';
import { silentLogger } from '../../../shared/logging/logger';
import { ManualClock } from '../../support/manual-clock';
import { AckLinks } from '../../../services/monitor/oncall/ack-links';
import { MIN, replica, type Stores } from './escalation-contract';

let server: Server;
let base: string;
let stores: Stores;
let clock: ManualClock;
let r: ReturnType<typeof replica>;

beforeEach(async () => {
  stores = { alerts: new InMemoryAlertStore(), store: new MemoryEscalationStore() };
  clock = new ManualClock();
  r = replica(stores, { clock });
  const table = new HttpRouteTable().add(
    ...onCallAckRoutes({ acknowledger: r.acks, alerts: stores.alerts, logger: silentLogger() }),
  );
  server = createServer((req, res) => void table.dispatch(req, res, silentLogger()));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  await new Promise((resolve) => server.close(resolve));
});

async function pagedLink(title = 'db down 🔥 数据库 قاعدة') {
  const id = await r.raise(title);
  await r.engine.tick();
  const url = new URL(r.pager.sent.at(-1)!.data.ack_url!);
  return { id, token: url.searchParams.get('t')!, path: `${url.pathname}${url.search}` };
}

const post = (path: string, body = '') =>
  fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body,
  });

describe('/oncall/ack', () => {
  it('GET shows the alert and a POST form, never acknowledges, and sends the page headers', async () => {
    const { id, path } = await pagedLink();
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${base}${path}`);
      expect(res.status).toBe(200);
      const html = await res.text();
      expect(html).toContain('<form method="post"');
      expect(html).toContain('db down 🔥 数据库 قاعدة');
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('content-security-policy')).toContain("form-action 'self'");
    }
    expect((await r.lifecycle.get(id)).entry.state).toBe('triggered');
  });

  it('POST acknowledges as the paged user (how: link); a replayed POST answers already acknowledged', async () => {
    const { id, path } = await pagedLink();
    const first = await post(path);
    expect(first.status).toBe(200);
    expect(await first.text()).toContain('is acknowledged by alice');
    const { entry, timeline } = await r.lifecycle.get(id);
    expect(entry.acknowledgedBy).toBe('alice');
    expect(timeline.at(-1)).toMatchObject({ kind: 'acknowledged', actor: 'alice', detail: 'link' });
    const again = await post(path);
    expect(again.status).toBe(200);
    expect(await again.text()).toContain('already acknowledged');
    expect((await r.lifecycle.get(id)).timeline.filter((t) => t.kind === 'acknowledged')).toHaveLength(1);
  });

  it('a token in the form body works as well as in the query', async () => {
    const { id, token } = await pagedLink();
    expect((await post('/oncall/ack', `t=${encodeURIComponent(token)}`)).status).toBe(200);
    expect((await r.lifecycle.get(id)).entry.state).toBe('acknowledged');
  });

  it('forged, another key, expired, missing or malformed: 403 with a clear page, nothing changed', async () => {
    const { id, token } = await pagedLink();
    const other = await r.raise('cache down');
    const [payload, mac] = token.split('.') as [string, string];
    const moved = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown[];
    moved[0] = other;
    const forged = `${Buffer.from(JSON.stringify(moved)).toString('base64url')}.${mac}`;
    const foreign = new AckLinks({ signingKey: 'z'.repeat(32), publicBaseUrl: 'https://x', clock }).token(
      id,
      'alice',
      clock.now() + MIN,
    );
    for (const t of [forged, foreign, 'nope', '', 'a.b.c', 'x'.repeat(5000)]) {
      for (const res of [
        await fetch(`${base}/oncall/ack?t=${encodeURIComponent(t)}`),
        await post(`/oncall/ack?t=${encodeURIComponent(t)}`),
      ]) {
        expect(res.status).toBe(403);
        expect(await res.text()).toContain('not valid');
      }
    }
    clock.advance(60 * MIN);
    const expired = await post(`/oncall/ack?t=${encodeURIComponent(token)}`);
    expect(expired.status).toBe(403);
    expect(await expired.text()).toContain('expired');
    expect((await r.lifecycle.get(id)).entry.state).toBe('triggered');
    expect((await r.lifecycle.get(other)).entry.state).toBe('triggered');
  });
});
