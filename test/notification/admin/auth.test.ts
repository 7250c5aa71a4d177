import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AdminAuth } from '../../../services/notification/admin/auth';
import { loadJose, type Jose } from '../../../services/notification/admin/jose';
import { FailedPreconditionError, UnauthenticatedError, UnavailableError } from '../../../shared/errors';
import { authOptions, AUDIENCE, hsToken, ISSUER } from './harness';

type KeyPair = Awaited<ReturnType<Jose['generateKeyPair']>>;

const now = (): number => Math.floor(Date.now() / 1000);

describe('AdminAuth with an HS256 secret', () => {
  const auth = new AdminAuth(authOptions());

  it('returns the token subject as the current user, with the token expiry', async () => {
    const exp = now() + 600;
    expect(await auth.authenticate(`Bearer ${await hsToken('alice', { exp })}`)).toEqual({
      userId: 'alice',
      expiresAt: new Date(exp * 1000),
      operator: false,
    });
  });

  it('accepts a token that expired within the clock skew', async () => {
    const token = await hsToken('alice', { exp: now() - 10 });
    expect(await auth.authenticate(`Bearer ${token}`)).toMatchObject({ userId: 'alice' });
  });

  it('rejects a token that expired beyond the clock skew', async () => {
    const token = await hsToken('alice', { exp: now() - 60 });
    await expect(auth.authenticate(`Bearer ${token}`)).rejects.toThrow(UnauthenticatedError);
  });

  it('rejects a token without exp', async () => {
    const { SignJWT } = await loadJose();
    const token = await new SignJWT({ sub: 'alice', iss: ISSUER, aud: AUDIENCE })
      .setProtectedHeader({ alg: 'HS256' })
      .sign(new TextEncoder().encode(authOptions().jwt_secret));
    await expect(auth.authenticate(`Bearer ${token}`)).rejects.toThrow(UnauthenticatedError);
  });

  it('rejects an unsigned (alg none) token', async () => {
    const { UnsecuredJWT } = await loadJose();
    const token = new UnsecuredJWT({ sub: 'alice', iss: ISSUER, aud: AUDIENCE })
      .setExpirationTime('1h')
      .encode();
    await expect(auth.authenticate(`Bearer ${token}`)).rejects.toThrow(UnauthenticatedError);
  });

  /** A token for alice with these `iat` and `exp` (seconds), `iat` left out when undefined. */
  const timedToken = async (iat: number | undefined, exp: number): Promise<string> => {
    const { SignJWT } = await loadJose();
    let jwt = new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('alice').setIssuer(ISSUER);
    jwt = jwt.setAudience(AUDIENCE).setExpirationTime(exp);
    if (iat !== undefined) jwt = jwt.setIssuedAt(iat);
    return jwt.sign(new TextEncoder().encode(authOptions().jwt_secret));
  };

  it('rejects a token issued in the future beyond the clock skew', async () => {
    const token = await timedToken(now() + 3600, now() + 7200);
    await expect(auth.authenticate(`Bearer ${token}`)).rejects.toThrow(UnauthenticatedError);
  });

  it('accepts a token issued in the future within the clock skew', async () => {
    const token = await timedToken(now() + 10, now() + 600);
    expect(await auth.authenticate(`Bearer ${token}`)).toMatchObject({ userId: 'alice' });
  });

  it('rejects a token whose lifetime (exp - iat) exceeds admin.auth.max_token_lifetime (24 h by default)', async () => {
    const token = await timedToken(now() - 60, now() + 25 * 3600);
    await expect(auth.authenticate(`Bearer ${token}`)).rejects.toThrow('the token lives longer than allowed');
    const shorter = new AdminAuth(authOptions({ max_token_lifetime: 600 }));
    const hour = await timedToken(now(), now() + 3600);
    await expect(shorter.authenticate(`Bearer ${hour}`)).rejects.toThrow(UnauthenticatedError);
  });

  it('rejects a token without iat that expires later than max_token_lifetime from now', async () => {
    const token = await timedToken(undefined, now() + 30 * 24 * 3600);
    await expect(auth.authenticate(`Bearer ${token}`)).rejects.toThrow(UnauthenticatedError);
    const short = await timedToken(undefined, now() + 600);
    expect(await auth.authenticate(`Bearer ${short}`)).toMatchObject({ userId: 'alice' });
  });

  it.each([undefined, '', 'Basic YWxpY2U6cHc=', 'Bearer', 'Bearer a b'])(
    'rejects the Authorization header %p as missing',
    async (header) => {
      await expect(auth.authenticate(header)).rejects.toThrow('a bearer token is required');
    },
  );
});

describe('AdminAuth configuration', () => {
  it('in production without any key, refuses to start', () => {
    expect(() => new AdminAuth(authOptions({ jwt_secret: undefined, environment: 'production' }))).toThrow(
      FailedPreconditionError,
    );
  });

  it('refuses an HS256 secret shorter than 32 bytes', () => {
    expect(() => new AdminAuth(authOptions({ jwt_secret: 'short' }))).toThrow(/at least 32 bytes/);
  });

  it('refuses to mint demo tokens when real keys are configured', async () => {
    await expect(new AdminAuth(authOptions()).demoLoginUrl('http://x')).rejects.toThrow(
      FailedPreconditionError,
    );
  });

  it('outside production without keys, the demo login link carries a token for the demo user in the fragment', async () => {
    const auth = new AdminAuth(authOptions({ jwt_secret: undefined, demo_user: 'demo-admin' }));
    expect(auth.demoMode).toBe(true);
    const url = await auth.demoLoginUrl('http://localhost:8080/');
    const match = /^http:\/\/localhost:8080\/admin\/notifications#token=([^&]+)$/.exec(url);
    expect(match).not.toBeNull();
    expect(await auth.authenticate(`Bearer ${decodeURIComponent(match![1])}`)).toMatchObject({
      userId: 'demo-admin',
    });
  });

  it('the demo console link signs the demo user in as an operator; the admin page link does not', async () => {
    const auth = new AdminAuth(authOptions({ jwt_secret: undefined }));
    const consoleToken = (await auth.demoConsoleUrl('http://x')).split('/admin/console#token=')[1]!;
    const pageToken = (await auth.demoLoginUrl('http://x')).split('#token=')[1]!;
    expect(await auth.authenticate(`Bearer ${decodeURIComponent(consoleToken)}`)).toMatchObject({
      userId: 'demo',
      operator: true,
    });
    expect(await auth.authenticate(`Bearer ${pageToken}`)).toMatchObject({ operator: false });
    await expect(new AdminAuth(authOptions()).demoConsoleUrl('http://x')).rejects.toThrow(
      FailedPreconditionError,
    );
  });

  it.each([
    ['an array holding an operator role', ['viewer', 'notification:operator'], true],
    ['space-separated values holding one', 'read notification:operator', true],
    ['a role that only starts like one', ['notification:operator-x'], false],
    ['a string that holds it as a substring', 'notification:operators', false],
    ['an array of non-strings', [1, null, { role: 'notification:operator' }], false],
    ['an object', { 'notification:operator': true }, false],
    ['no claim', undefined, false],
  ])('names an operator from the roles claim: %s', async (_label, roles, operator) => {
    const token = await hsToken('alice', roles === undefined ? {} : { claims: { roles } });
    expect((await new AdminAuth(authOptions()).authenticate(`Bearer ${token}`)).operator).toBe(operator);
  });

  it('reads the configured operator claim and roles, not the default ones', async () => {
    const custom = new AdminAuth(authOptions({ operator_claim: 'groups', operator_roles: ['sre'] }));
    const byDefaultClaim = await hsToken('a', { claims: { roles: ['notification:operator'] } });
    const byGroups = await hsToken('a', { claims: { groups: ['sre'] } });
    expect((await custom.authenticate(`Bearer ${byDefaultClaim}`)).operator).toBe(false);
    expect((await custom.authenticate(`Bearer ${byGroups}`)).operator).toBe(true);
  });

  it('two demo-mode instances use different secrets', async () => {
    const a = new AdminAuth(authOptions({ jwt_secret: undefined }));
    const b = new AdminAuth(authOptions({ jwt_secret: undefined }));
    const token = (await a.demoLoginUrl('http://x')).split('#token=')[1];
    await expect(b.authenticate(`Bearer ${token}`)).rejects.toThrow(UnauthenticatedError);
  });
});

describe('AdminAuth with a JWKS URL', () => {
  let server: Server;
  let jwksUrl: string;
  let rsa: KeyPair;
  let ec: KeyPair;
  let stranger: KeyPair;
  let jose: Jose;

  beforeAll(async () => {
    jose = await loadJose();
    rsa = await jose.generateKeyPair('RS256');
    ec = await jose.generateKeyPair('ES256');
    stranger = await jose.generateKeyPair('ES256');
    const keys = [
      { ...(await jose.exportJWK(rsa.publicKey)), kid: 'rsa-1', alg: 'RS256', use: 'sig' },
      { ...(await jose.exportJWK(ec.publicKey)), kid: 'ec-1', alg: 'ES256', use: 'sig' },
    ];
    server = createServer((req, res) => {
      if (req.url === '/.well-known/jwks.json') {
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ keys }));
      } else {
        res.writeHead(500).end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  async function sign(
    alg: 'RS256' | 'ES256',
    kid: string,
    key: KeyPair['privateKey'],
    sub = 'carol',
  ): Promise<string> {
    return new jose.SignJWT({})
      .setProtectedHeader({ alg, kid })
      .setSubject(sub)
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setExpirationTime('5m')
      .sign(key);
  }

  const jwksAuth = (): AdminAuth => new AdminAuth(authOptions({ jwt_secret: undefined, jwks_url: jwksUrl }));

  it('accepts an RS256 token signed by a key of the set', async () => {
    expect(
      await jwksAuth().authenticate(`Bearer ${await sign('RS256', 'rsa-1', rsa.privateKey)}`),
    ).toMatchObject({
      userId: 'carol',
    });
  });

  it('accepts an ES256 token signed by a key of the set', async () => {
    expect(
      await jwksAuth().authenticate(`Bearer ${await sign('ES256', 'ec-1', ec.privateKey, 'dave')}`),
    ).toMatchObject({
      userId: 'dave',
    });
  });

  it('rejects an ES256 token signed by a key outside the set', async () => {
    const token = await sign('ES256', 'ec-1', stranger.privateKey);
    await expect(jwksAuth().authenticate(`Bearer ${token}`)).rejects.toThrow(UnauthenticatedError);
  });

  it('rejects an HS256 token when only a JWKS is configured', async () => {
    await expect(jwksAuth().authenticate(`Bearer ${await hsToken('carol')}`)).rejects.toThrow(
      UnauthenticatedError,
    );
  });

  it('when the JWKS endpoint fails, reports the keys as unavailable rather than the token as bad', async () => {
    const auth = new AdminAuth(
      authOptions({ jwt_secret: undefined, jwks_url: jwksUrl.replace('jwks.json', 'gone') }),
    );
    const token = await sign('ES256', 'ec-1', ec.privateKey);
    await expect(auth.authenticate(`Bearer ${token}`)).rejects.toThrow(UnavailableError);
  });
});
