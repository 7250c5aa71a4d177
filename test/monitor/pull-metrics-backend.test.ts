/**
 * `backend_type: pull_metrics` works in the monitor: its registry (own metrics and ingested series)
 * is also served on the backend's own port (behind `metrics.auth_token`) and pushed to the
 * Pushgateway. Without it, no second server.
 */
import type { IncomingMessage } from 'node:http';
import { startMonitorApp } from '../support/monitor-app';
import { listen } from '../shared/monitoring/helpers';

async function get(url: string, token?: string): Promise<{ status: number; body: string }> {
  const res = await fetch(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  return { status: res.status, body: await res.text() };
}

describe('the pull_metrics backend of the monitor', () => {
  it('serves the monitor registry on its own port, behind the metrics token, and pushes it', async () => {
    const pushed: Array<{ method?: string; url?: string; body: string }> = [];
    const gateway = await listen((req: IncomingMessage, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        pushed.push({ method: req.method, url: req.url, body });
        res.end();
      });
    });
    const m = await startMonitorApp({
      backend_type: 'pull_metrics',
      metrics: { auth_token: 'metrics-token-0123456789' },
      pull_metrics: { port: 0, path: '/scrape', push_gateway_url: gateway.url, push_interval: 3600 },
    });
    try {
      const backend = m.app.pullMetrics!;
      expect(backend.port).toBeGreaterThan(0);
      const url = `http://127.0.0.1:${backend.port}/scrape`;
      expect((await get(url)).status).toBe(401);
      const scraped = await get(url, 'metrics-token-0123456789');
      expect(scraped.status).toBe(200);
      expect(scraped.body).toContain('process_cpu_user_seconds_total');
      expect(await backend.pushNow()).toBe(true);
      expect(pushed).toHaveLength(1);
      expect(pushed[0]!.body).toContain('process_cpu_user_seconds_total');
    } finally {
      await m.close();
      await gateway.close();
    }
  });

  it('is off with any other backend', async () => {
    const m = await startMonitorApp({ backend_type: 'noop' });
    try {
      expect(m.app.pullMetrics).toBeUndefined();
    } finally {
      await m.close();
    }
  });

  it('store_in_db stops the start with a clear error: the monitor keeps no database', async () => {
    const outcome = await startMonitorApp({
      backend_type: 'pull_metrics',
      pull_metrics: { store_in_db: true },
    }).then(
      async (m) => {
        await m.close();
        return 'started';
      },
      (err: Error) => err.message,
    );
    expect(outcome).toContain('pull_metrics.store_in_db needs a database');
  });
});
