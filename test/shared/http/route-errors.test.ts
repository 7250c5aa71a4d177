/**
 * The one mapping of a gateway route's error (shared/http/errors.ts `describeRouteError`,
 * `sendRouteError`): what every page route (the admin page, the console, the monitor's status page)
 * answers. A database that cannot be reached is 503 `unavailable` as the RPCs answer it, never a 500
 * that reads as a bug; an unknown error's words never reach the caller.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describeRouteError, sendRouteError } from '../../../shared/http/errors';
import { NotFoundError, UnavailableError } from '../../../shared/errors';
import { silentLogger } from '../../../shared/logging/logger';
import { DATABASE_UNAVAILABLE_MESSAGE } from '../../../shared/storage/unavailable';

describe('describeRouteError', () => {
  it('a domain error keeps its code and message; a 5xx one is logged as a dependency outage', () => {
    expect(describeRouteError(new NotFoundError('no such alert 🚨'))).toEqual({
      status: 404,
      code: 'not_found',
      message: 'no such alert 🚨',
    });
    expect(describeRouteError(new UnavailableError('shutting down'))).toMatchObject({
      status: 503,
      code: 'unavailable',
      log: 'warn',
    });
  });

  it('a database that cannot be reached is 503 unavailable (retry later), logged at warn', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const poolTimeout = Object.assign(new Error('Knex: Timeout acquiring a connection'), {
      name: 'KnexTimeoutError',
    });
    for (const err of [refused, poolTimeout])
      expect(describeRouteError(err)).toEqual({
        status: 503,
        code: 'unavailable',
        message: DATABASE_UNAVAILABLE_MESSAGE,
        log: 'warn',
      });
  });

  it('anything else is a generic 500 internal, logged at error, its words kept from the caller', () => {
    const bug = Object.assign(new Error('relation "deliveries" does not exist'), { code: '42P01' });
    expect(describeRouteError(bug)).toEqual({
      status: 500,
      code: 'internal',
      message: 'internal error',
      log: 'error',
    });
    expect(describeRouteError('thrown text')).toMatchObject({ status: 500, code: 'internal' });
  });
});

describe('sendRouteError', () => {
  let server: Server;
  let thrown: unknown;
  const logged: Array<[string, string]> = [];
  const logger = Object.assign(silentLogger(), {
    warn: (_: unknown, msg: string) => void logged.push(['warn', msg]),
    error: (_: unknown, msg: string) => void logged.push(['error', msg]),
  });

  beforeAll(async () => {
    server = createServer((_req, res) =>
      sendRouteError(res, thrown, logger, { route: 'test' }, { 'X-Test': '1' }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('answers the JSON error body with the status, the headers given, and logs as described', async () => {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    thrown = Object.assign(new Error('terminating connection due to administrator command'), {
      code: '57P01',
    });
    const down = await fetch(url);
    expect(down.status).toBe(503);
    expect(down.headers.get('x-test')).toBe('1');
    expect(await down.json()).toEqual({
      error: { code: 'unavailable', message: DATABASE_UNAVAILABLE_MESSAGE },
    });

    thrown = new Error('secret internals');
    const bug = await fetch(url);
    expect(bug.status).toBe(500);
    expect(await bug.text()).not.toContain('secret');

    thrown = new NotFoundError('no such silence');
    expect((await fetch(url)).status).toBe(404);
    expect(logged).toEqual([
      ['warn', 'route failed on a dependency'],
      ['error', 'route failed'],
    ]);
  });
});
