/** The chart routes of the status page (issue 29): auth, bounds, names with emoji/CJK/RTL, the points. */
import { silentLogger } from '../../../shared/logging/logger';
import { MemoryTargetHistoryStore } from '../../../services/monitor/targets/history';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';
import { StatusSourceDouble, target } from './status-source-double';

const NOW = Date.parse('2026-11-29T12:07:30Z');
const NAME = 'search 🔍 搜索 بحث';
const TOKEN = 'page-token-0123456789abcdef';
let svc: RunningMonitorApp;

beforeAll(async () => {
  const history = new MemoryTargetHistoryStore();
  // 10 minutes of probes, one each minute: 8 up, 2 down.
  for (let i = 0; i < 10; i++)
    await history.record(NAME, {
      atMs: NOW - i * 60_000,
      ok: i >= 2,
      latencyMs: 10 + i,
      ...(i < 2 ? { error: 'HTTP 503' } : {}),
    });
  const source = new StatusSourceDouble({
    targets: [target(NAME, { up: false, consecutiveFailures: 2, lastError: 'HTTP 503' })],
  });
  svc = await startMonitorApp({ web: { api_tokens: [TOKEN] } }, silentLogger(), {
    statusSource: source,
    targetHistory: history,
    chartNow: () => NOW,
  });
}, 60_000);

afterAll(async () => {
  await svc?.close();
});

const url = (name: string, range?: string) =>
  `${svc.baseUrl}/status/targets/${encodeURIComponent(name)}/history${range === undefined ? '' : `?range=${range}`}`;
const auth = { authorization: `Bearer ${TOKEN}` };

describe('GET /status/targets/<name>/history', () => {
  it('answers 401 without a token, and with a wrong one', async () => {
    expect((await fetch(url(NAME, '24h'))).status).toBe(401);
    const wrong = await fetch(url(NAME, '24h'), { headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    expect(JSON.stringify(await wrong.json())).not.toContain(TOKEN);
  });

  it('answers 96 points for 24h (default) with the seeded probes in the last ones', async () => {
    for (const range of ['24h', undefined]) {
      const res = await fetch(url(NAME, range), { headers: auth });
      expect(res.status).toBe(200);
      const body = (await res.json()) as {
        target: string;
        range: string;
        step_seconds: number;
        points: Array<{ probes: number; up_ratio: number | null; latency_max_ms: number | null }>;
      };
      expect(body.target).toBe(NAME);
      expect(body.range).toBe('24h');
      expect(body.step_seconds).toBe(900);
      expect(body.points).toHaveLength(96);
      // 12:00-12:15 holds 12:00..12:07 (8 probes, 2 down); 11:45-12:00 holds 11:58, 11:59 (up).
      expect(body.points[95]).toMatchObject({ probes: 8, up_ratio: 0.75, latency_max_ms: 17 });
      expect(body.points[94]).toMatchObject({ probes: 2, up_ratio: 1 });
      expect(body.points.slice(0, 94).every((p) => p.up_ratio === null)).toBe(true);
    }
  });

  it('answers 90 points for 30d', async () => {
    const res = await fetch(url(NAME, '30d'), { headers: auth });
    const body = (await res.json()) as { points: Array<{ probes: number }> };
    expect(body.points).toHaveLength(90);
    expect(body.points[89]!.probes).toBe(10);
  });

  it('refuses another range with 400 and an unknown target with 404', async () => {
    for (const range of ['7d', '', '24H', 'constructor', '__proto__']) {
      const res = await fetch(url(NAME, range), { headers: auth });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_argument');
    }
    const missing = await fetch(url('nope 🚫', '24h'), { headers: auth });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('not_found');
  });
});
