/**
 * Issue 24: the API token is checked once per call. Both ports decide on the headers before they
 * read a body (grpc-intake.ts, http-port.ts); the auth interceptor takes that verdict into the
 * handler's context instead of checking the token again, and refuses a call that has none.
 */
import * as grpc from '@grpc/grpc-js';
import { Code, ConnectError, createClient, createRouterTransport } from '@connectrpc/connect';
import { ApiTokens } from '../../../shared/auth/api-tokens';
import { EchoService } from '../../../shared/gen/svc/testing/v1/echo_pb';
import { authInterceptor } from '../../../shared/rpc/interceptors';
import { unary } from '../../support/grpc-clients';
import { EchoServiceImpl } from '../../support/echo-service';
import { capturingLogger, startEchoServer, type EchoHarness } from './harness';

describe('one token check per call', () => {
  const token = 'echo-once-token-4b1d';
  const bearer = { authorization: `Bearer ${token}` };
  const captured = capturingLogger();
  let h: EchoHarness;
  let checks: jest.SpyInstance;
  beforeAll(async () => {
    h = await startEchoServer({
      logger: captured.logger,
      apiTokens: [{ name: 'once', token, scopes: ['echo:call', 'echo:watch'] }],
      scopes: { echo: 'echo:call', echoStream: 'echo:watch' },
    });
    checks = jest.spyOn(ApiTokens.prototype, 'authenticate');
  });
  afterAll(async () => {
    checks.mockRestore();
    await h.close();
  });

  /** How many times the token was checked while `call` ran. */
  async function checksDuring(call: () => Promise<unknown>): Promise<number> {
    const before = checks.mock.calls.length;
    await call();
    return checks.mock.calls.length - before;
  }

  test('a unary call on the gRPC port checks the token once, and the handler knows its caller', async () => {
    const n = await checksDuring(() =>
      unary(h.grpc, 'echo', { message: 'x', failCode: 'NOT_FOUND' }, { metadata: bearer }).catch(
        () => undefined,
      ),
    );
    expect(n).toBe(1);
    expect(captured.lines()).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ caller: 'once', transport: 'grpc', rpcMethod: 'Echo', code: 'not_found' }),
      ]),
    );
  });

  test('a unary call on the HTTP port (Connect) checks the token once, and the handler knows its caller', async () => {
    const n = await checksDuring(() =>
      h
        .connect(bearer)
        .echo({ message: 'x', failCode: 'NOT_FOUND' })
        .catch(() => undefined),
    );
    expect(n).toBe(1);
    expect(captured.lines()).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ caller: 'once', transport: 'http', rpcMethod: 'Echo', code: 'not_found' }),
      ]),
    );
  });

  test('a server stream checks the token once on either port', async () => {
    const grpcStream = await checksDuring(
      () =>
        new Promise<void>((resolve, reject) => {
          const md = new grpc.Metadata();
          md.set('authorization', bearer.authorization);
          const call = (
            h.grpc.echoStream as (req: unknown, md: grpc.Metadata) => grpc.ClientReadableStream<unknown>
          ).call(h.grpc, { count: 3 }, md);
          call.on('data', () => undefined);
          call.on('error', reject);
          call.on('end', () => resolve());
        }),
    );
    expect(grpcStream).toBe(1);
    const seqs: number[] = [];
    const connectStream = await checksDuring(async () => {
      for await (const msg of h.connect(bearer).echoStream({ count: 3 })) seqs.push(msg.seq);
    });
    expect(seqs).toEqual([0, 1, 2]);
    expect(connectStream).toBe(1);
  });

  test('a refused call is checked once too', async () => {
    const n = await checksDuring(() =>
      unary(h.grpc, 'echo', { message: 'x' }, { metadata: { authorization: 'Bearer wrong' } }).catch(
        () => undefined,
      ),
    );
    expect(n).toBe(1);
  });
});

describe('a call that arrives without the intake verdict', () => {
  test('is refused UNAUTHENTICATED and never reaches its handler (fail closed)', async () => {
    const impl = new EchoServiceImpl();
    const echo = jest.spyOn(impl, 'echo');
    // An in-memory transport: no port ran its intake, so no verdict is in the context.
    const transport = createRouterTransport((router) => router.service(EchoService, impl), {
      router: { interceptors: [authInterceptor()] },
    });
    const err = await createClient(EchoService, transport)
      .echo({ message: 'x' }, { headers: { authorization: 'Bearer anything' } })
      .catch((e: unknown) => ConnectError.from(e));
    expect(err).toMatchObject({ code: Code.Unauthenticated });
    expect(echo).not.toHaveBeenCalled();
  });
});
