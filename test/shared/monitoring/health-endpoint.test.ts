import { HealthChecker } from '../../../shared/monitoring/health/checker';
import { watchReadiness } from '../../../shared/monitoring/health/readiness';
import { HealthCheckRegistry } from '../../../shared/monitoring/health/registry';
import { HealthCheckCategory, HealthStatus } from '../../../shared/monitoring/health/result';
import { HealthCheckProvider, type HealthPayload } from '../../../shared/monitoring/http/health-provider';
import { FakeClock, FakeTimers, listen, settle, type TestServer } from './helpers';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function serve(provider: HealthCheckProvider, next?: Parameters<HealthCheckProvider['middleware']>[0]) {
  server = await listen(provider.middleware(next));
  return server.url;
}

function checkerWith(status: 'healthy' | 'degraded' | 'unhealthy'): HealthChecker {
  return new HealthChecker().add('db', () => ({ status }));
}

describe('HealthCheckProvider /health', () => {
  it('answers 200 with status and a float timestamp when every check is healthy', async () => {
    const clock = new FakeClock(0, 1_700_000_000_500);
    const checker = new HealthChecker({ clock }).add('db', () => true);
    const url = await serve(new HealthCheckProvider({ checker }));
    const res = await fetch(`${url}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'healthy', timestamp: 1_700_000_000.5 });
  });

  it('answers 207 when some check is degraded', async () => {
    const url = await serve(new HealthCheckProvider({ checker: checkerWith('degraded') }));
    const res = await fetch(`${url}/health`);
    expect(res.status).toBe(207);
    expect(((await res.json()) as HealthPayload).status).toBe('degraded');
  });

  it('answers 503 when some check is unhealthy', async () => {
    const url = await serve(new HealthCheckProvider({ checker: checkerWith('unhealthy') }));
    const res = await fetch(`${url}/health`);
    expect(res.status).toBe(503);
    expect(((await res.json()) as HealthPayload).status).toBe('unhealthy');
  });

  it('includes each check under checks when include_details is set', async () => {
    const url = await serve(
      new HealthCheckProvider({ checker: checkerWith('healthy'), include_details: true }),
    );
    const body = (await (await fetch(`${url}/health`)).json()) as HealthPayload;
    expect(body.checks!.db).toMatchObject({ component: 'db', status: 'healthy', category: 'readiness' });
  });

  it('leaves checks out without include_details', async () => {
    const url = await serve(new HealthCheckProvider({ checker: checkerWith('healthy') }));
    expect(await (await fetch(`${url}/health`)).json()).not.toHaveProperty('checks');
  });

  it('reports healthy without a checker', async () => {
    const url = await serve(new HealthCheckProvider());
    expect((await fetch(`${url}/health`)).status).toBe(200);
  });

  it('a subclass overriding checkHealth decides the answer', async () => {
    class DbHealth extends HealthCheckProvider {
      override async checkHealth(): Promise<HealthPayload> {
        return { status: HealthStatus.DEGRADED, timestamp: 1 };
      }
    }
    const url = await serve(new DbHealth());
    expect((await fetch(`${url}/health`)).status).toBe(207);
  });

  it('works with the legacy registry', async () => {
    const registry = new HealthCheckRegistry().add('cache', () => false, null, false);
    const url = await serve(new HealthCheckProvider({ checker: registry }));
    expect((await fetch(`${url}/health`)).status).toBe(207);
  });

  it('serves a custom path', async () => {
    const url = await serve(new HealthCheckProvider({ path: '/status' }));
    expect((await fetch(`${url}/status`)).status).toBe(200);
    expect((await fetch(`${url}/health`)).status).toBe(404);
  });
});

describe('HealthCheckProvider probes', () => {
  function probeChecker(): HealthChecker {
    return new HealthChecker()
      .add('alive', () => true, null, HealthCheckCategory.LIVENESS)
      .add('deps', () => false, null, HealthCheckCategory.READINESS)
      .add('warmup', () => ({ status: 'degraded' }), null, HealthCheckCategory.STARTUP);
  }

  it('/health/live runs only the liveness checks', async () => {
    const url = await serve(new HealthCheckProvider({ checker: probeChecker(), include_details: true }));
    const res = await fetch(`${url}/health/live`);
    expect(res.status).toBe(200);
    expect(Object.keys(((await res.json()) as HealthPayload).checks!)).toEqual(['alive']);
  });

  it('/health/ready runs only the readiness checks', async () => {
    const url = await serve(new HealthCheckProvider({ checker: probeChecker() }));
    expect((await fetch(`${url}/health/ready`)).status).toBe(503);
  });

  it('/health/startup runs only the startup checks', async () => {
    const url = await serve(new HealthCheckProvider({ checker: probeChecker() }));
    expect((await fetch(`${url}/health/startup`)).status).toBe(207);
  });
});

describe('HealthCheckProvider routing and auth', () => {
  it('answers 404 JSON for another path when there is no next handler', async () => {
    const url = await serve(new HealthCheckProvider());
    const res = await fetch(`${url}/other`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: { code: 'not_found', message: 'no such path' } });
  });

  it('forwards other paths to the next handler when composed', async () => {
    const url = await serve(new HealthCheckProvider(), (_req, res) => {
      res.writeHead(418).end('teapot');
    });
    const res = await fetch(`${url}/other`);
    expect(res.status).toBe(418);
  });

  it('handle resolves false for a path that is not its own', async () => {
    const provider = new HealthCheckProvider();
    let handled: boolean | undefined;
    server = await listen((req, res) => {
      void provider.handle(req, res).then((h) => {
        handled = h;
        if (!h) res.writeHead(204).end();
      });
    });
    await fetch(`${server.url}/x`);
    expect(handled).toBe(false);
  });

  it('with auth_token set, a request without the bearer header gets 401 and WWW-Authenticate: Bearer', async () => {
    const url = await serve(new HealthCheckProvider({ auth_token: 'tok' }));
    const res = await fetch(`${url}/health`);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('with auth_token set, a wrong token gets 401 on the probes too', async () => {
    const url = await serve(new HealthCheckProvider({ auth_token: 'tok' }));
    const res = await fetch(`${url}/health/ready`, { headers: { Authorization: 'Bearer tok2' } });
    expect(res.status).toBe(401);
  });

  it('with auth_token set, the right bearer token is answered', async () => {
    const url = await serve(new HealthCheckProvider({ auth_token: 'tok' }));
    const res = await fetch(`${url}/health`, { headers: { Authorization: 'Bearer tok' } });
    expect(res.status).toBe(200);
  });

  it('answers 405 for methods other than GET and HEAD', async () => {
    const url = await serve(new HealthCheckProvider());
    const res = await fetch(`${url}/health`, { method: 'POST' });
    expect(res.status).toBe(405);
  });
});

describe('watchReadiness', () => {
  it('reports the serving flag at start and whenever readiness changes', async () => {
    const timers = new FakeTimers();
    let up = true;
    const checker = new HealthChecker().add('db', () => up);
    const seen: boolean[] = [];
    const watch = watchReadiness(checker, 1000, (serving) => seen.push(serving), { timers });
    await settle();
    up = false;
    timers.advance(1000);
    await settle();
    timers.advance(1000);
    await settle();
    watch.stop();
    expect(seen).toEqual([true, false]);
    expect(watch.serving).toBe(false);
  });

  it('a degraded readiness still serves', async () => {
    const watch = watchReadiness(checkerWith('degraded'), 1000, () => undefined, {
      timers: new FakeTimers(),
    });
    expect(await watch.poll()).toBe(true);
    watch.stop();
  });

  it('stop clears its timer', () => {
    const timers = new FakeTimers();
    const watch = watchReadiness(checkerWith('healthy'), 1000, () => undefined, { timers });
    watch.stop();
    watch.stop();
    expect(timers.pending).toBe(0);
  });
});

describe('HealthCheckProvider.fromConfig', () => {
  it('takes path, include_details and auth_token from a HealthConfig', async () => {
    const provider = HealthCheckProvider.fromConfig(
      { path: '/hc', include_details: true, auth_token: 'tok' },
      checkerWith('healthy'),
    );
    const url = await serve(provider);
    expect((await fetch(`${url}/hc`)).status).toBe(401);
    const body = (await (
      await fetch(`${url}/hc`, { headers: { Authorization: 'Bearer tok' } })
    ).json()) as HealthPayload;
    expect(Object.keys(body.checks!)).toEqual(['db']);
  });
});
