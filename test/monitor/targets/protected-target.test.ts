/**
 * Probing a protected health endpoint: the notification service with `health.auth_token` set (as
 * the production checklist says) answers `/health` only with the bearer token, so a monitor target
 * carries it (`bearer_token`, or `headers`). With the token the target is up; without it, down
 * (HTTP 401). Real services: the notification app and the monitor app in-process on real ports.
 */
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';
import { startNotificationApp, type RunningNotificationApp } from '../../support/notification-app';
import { waitFor } from '../../support/wait';

const HEALTH_TOKEN = 'health-token-8c1f2a';
// Probes every 100 ms, but each may take up to 5 s: on a loaded machine a 100 ms timeout (the
// default: the interval) fails a probe as "timeout" before the 401 it is here to see.
const PROBE_TIMEOUT_MS = 5000;

let notification: RunningNotificationApp;
let monitor: RunningMonitorApp;

beforeAll(async () => {
  notification = await startNotificationApp({ health: { auth_token: HEALTH_TOKEN } });
  const healthUrl = `${notification.baseUrl}/health/live`;
  monitor = await startMonitorApp({
    targets: [
      {
        name: 'with-bearer-token',
        http_url: healthUrl,
        bearer_token: HEALTH_TOKEN,
        interval_seconds: 0.1,
        timeout_ms: PROBE_TIMEOUT_MS,
      },
      {
        name: 'with-headers',
        http_url: healthUrl,
        headers: { Authorization: `Bearer ${HEALTH_TOKEN}`, 'x-probe': 'monitor' },
        interval_seconds: 0.1,
        timeout_ms: PROBE_TIMEOUT_MS,
      },
      { name: 'without-token', http_url: healthUrl, interval_seconds: 0.1, timeout_ms: PROBE_TIMEOUT_MS },
      {
        name: 'wrong-token',
        http_url: healthUrl,
        bearer_token: 'not-the-token',
        interval_seconds: 0.1,
        timeout_ms: PROBE_TIMEOUT_MS,
      },
    ],
  });
}, 60_000);

afterAll(async () => {
  await monitor?.close();
  await notification?.close();
});

function stateOf(name: string) {
  return monitor.app.targets.states().find((s) => s.name === name)!;
}

describe('a target whose health endpoint needs a token', () => {
  it('is up with the token (bearer_token or an Authorization header), down without it or with a wrong one', async () => {
    const known = (name: string) => stateOf(name).up !== null;
    await waitFor(
      () => ['with-bearer-token', 'with-headers', 'without-token', 'wrong-token'].every(known),
      'every target known',
    );
    expect(stateOf('with-bearer-token').up).toBe(true);
    expect(stateOf('with-headers').up).toBe(true);
    expect(stateOf('without-token')).toMatchObject({ up: false, lastError: 'HTTP 401' });
    expect(stateOf('wrong-token')).toMatchObject({ up: false, lastError: 'HTTP 401' });
  });

  it('never shows the token: not in the target state (page, alerts), nor in /health details', async () => {
    expect(JSON.stringify(monitor.app.targets.states())).not.toContain(HEALTH_TOKEN);
    const res = await fetch(`${monitor.baseUrl}/health`);
    expect(await res.text()).not.toContain(HEALTH_TOKEN);
  });
});
