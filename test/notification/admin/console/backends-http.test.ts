/**
 * The console's backends table over HTTP on the real service: each configured backend with its
 * driver kind, health, circuit (open after failures, with until when), queue depth and the last
 * hour's outcomes; never a secret of its configuration.
 */
import { CONSOLE_API_PATH } from '../../../../services/notification/admin/console/console-gateway';
import type { RunningNotificationApp } from '../../../support/notification-app';
import { authed, operatorToken, startAdminService } from '../harness';

const API_KEY = 'SG.console-backends-secret-key-7f3a9c';
const SMS_KEY = 'sms-console-secret-token-1b2c3d';

let svc: RunningNotificationApp;

beforeAll(async () => {
  svc = await startAdminService({
    // A provider nobody answers for: every attempt fails retryably.
    mailer: {
      backends: [
        {
          name: 'api',
          driver: 'http_api',
          primary: true,
          from_email: 'noreply@example.com',
          http_api: { base_url: 'http://127.0.0.1:1', api_key: API_KEY, timeout_ms: 500 },
        },
        {
          name: 'spare',
          driver: 'http_api',
          from_email: 'noreply@example.com',
          http_api: { base_url: 'http://127.0.0.1:1', api_key: `${API_KEY}-spare`, timeout_ms: 500 },
        },
      ],
    },
    sms_backends: [
      {
        name: 'gateway',
        sms_gateway: {
          account_sid: 'AC0123456789abcdef0123456789abcdef',
          auth_token: SMS_KEY,
          from_number: '+15550001111',
          base_url: 'http://127.0.0.1:1',
          timeout_ms: 500,
        },
      },
    ],
    delivery: {
      base_delay_ms: 600_000,
      max_delay_ms: 600_000,
      poll_interval_ms: 20,
      circuit_breaker: { failure_threshold: 1, cooldown_seconds: 3600 },
    },
  });
});
afterAll(() => svc?.close());

interface BackendJson {
  name: string;
  channel: string;
  kind: string;
  primary: boolean;
  health: { status: string; message: string | null; latency_ms: number | null };
  circuit: { state: string; consecutive_failures: number; until: string | null };
  queue_depth: number;
  outcomes: { window_seconds: number; sent: number; failed: number; retried: number };
}

async function backends(): Promise<{ text: string; items: BackendJson[] }> {
  const res = await fetch(`${svc.baseUrl}${CONSOLE_API_PATH}/backends`, authed(await operatorToken()));
  expect(res.status).toBe(200);
  const text = await res.text();
  const body = JSON.parse(text) as { items: BackendJson[]; next_cursor: null };
  expect(body.next_cursor).toBeNull();
  return { text, items: body.items };
}

/** Sends an email through the real RPC (the email channel builds the payload); its delivery id. */
async function submit(i: number): Promise<string> {
  const sent = await svc.notificationConnect.sendEmail({
    to: [`user${i}@example.com`],
    subject: 'Hello 😀 你好 שלום',
    text: 't',
  });
  return sent.deliveryId;
}

/** Waits (on real time: a real provider connection is refused) for `condition`, at most 5 s. */
async function eventually(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(condition()).toBe(true);
}

describe('console backends', () => {
  it('lists every configured backend, closed and empty before any send', async () => {
    const { items } = await backends();
    expect(items.map((b) => [b.channel, b.name, b.kind, b.primary])).toEqual([
      ['email', 'api', 'http_api', true],
      ['email', 'spare', 'http_api', false],
      ['sms', 'gateway', 'sms_gateway', true],
    ]);
    for (const b of items) {
      expect(b.circuit).toEqual({ state: 'closed', consecutive_failures: 0, until: null });
      expect(b.queue_depth).toBe(0);
      expect(b.outcomes).toEqual({ window_seconds: 3600, sent: 0, failed: 0, retried: 0 });
      expect(['healthy', 'degraded']).toContain(b.health.status);
    }
  });

  it('shows an open circuit after failures, with until when, the queued records and the retried count', async () => {
    await submit(0);
    await eventually(() => svc.app.deliveries.breakers.state('email', 'api') === 'open');
    await submit(1);
    await submit(2);
    const { items } = await backends();
    const api = items.find((b) => b.name === 'api')!;
    expect(api.circuit.state).toBe('open');
    expect(api.circuit.consecutive_failures).toBe(1);
    expect(Date.parse(api.circuit.until!)).toBeGreaterThan(Date.now());
    expect(api.queue_depth).toBe(3);
    expect(api.outcomes).toEqual({ window_seconds: 3600, sent: 0, failed: 0, retried: 1 });
    // An open circuit makes the backend degraded, as on /health.
    expect(api.health.status).toBe('degraded');
    expect(api.health.message).toBeTruthy();
    const spare = items.find((b) => b.name === 'spare')!;
    expect(spare.circuit.state).toBe('closed');
    expect(spare.queue_depth).toBe(0);
  });

  it('never shows a secret of a backend (API keys, base URLs)', async () => {
    const { text } = await backends();
    expect(text).not.toContain(API_KEY);
    expect(text).not.toContain(SMS_KEY);
    expect(text).not.toContain('SG.');
    expect(text).not.toContain('127.0.0.1:1');
  });
});
