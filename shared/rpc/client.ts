/**
 * The one outbound gRPC client stack: a typed Connect client (`createClient`, the same
 * `Client<typeof Service>` a Connect user writes against) over a grpc-js channel. DESIGN's transport
 * facts put gRPC on grpc-js (faster than connect-node here, and seen by the gRPC instrumentation);
 * both services' clients of each other are built with it.
 *
 * - Each call carries the bearer token (when given), the caller's headers as metadata, and a
 *   deadline: the call's `timeoutMs`, else the client's.
 * - A failure is a ConnectError whose code is the gRPC status (the numbers are the same) and whose
 *   message is the peer's details; an aborted signal cancels the call (CANCELED).
 * - No `waitForReady`: while the peer is down a call fails at once (UNAVAILABLE) instead of queueing.
 * - Unary calls only: neither service's client of the other streams.
 */
import * as grpc from '@grpc/grpc-js';
import type { DescMessage, DescMethodUnary, DescService, MessageShape } from '@bufbuild/protobuf';
import {
  Code,
  ConnectError,
  createClient,
  type Client,
  type Transport,
  type UnaryResponse,
} from '@connectrpc/connect';
import { createGrpcServiceDefinition } from './grpc-adapter';

/** Where and how a client connects. */
export interface GrpcClientOptions {
  /** `host:port` of the peer's gRPC port. */
  address: string;
  /** TLS with the system's roots; plaintext otherwise. */
  tls?: boolean;
  /** Sent as `authorization: Bearer <token>` on every call. */
  token?: string;
  /** Deadline of a call that does not set its own `timeoutMs`; none when absent. */
  timeoutMs?: number;
}

/** A typed client and the close of its channel. */
export interface GrpcClient<S extends DescService> {
  readonly client: Client<S>;
  close(): void;
}

type Callback = (err: grpc.ServiceError | null, res?: unknown) => void;
type UnaryMethod = (
  req: unknown,
  md: grpc.Metadata,
  opts: grpc.CallOptions,
  cb: Callback,
) => grpc.ClientUnaryCall;

function headersOf(metadata: grpc.Metadata | undefined): Headers {
  const headers = new Headers();
  for (const [key, values] of Object.entries(metadata?.getMap() ?? {})) {
    if (typeof values === 'string') headers.set(key, values);
  }
  return headers;
}

/** A typed client of `service` over a grpc-js channel to `options.address`. */
export function createGrpcClient<S extends DescService>(
  service: S,
  options: GrpcClientOptions,
): GrpcClient<S> {
  const Ctor = grpc.makeGenericClientConstructor(createGrpcServiceDefinition(service), service.name);
  const credentials = options.tls ? grpc.credentials.createSsl() : grpc.credentials.createInsecure();
  const channel = new Ctor(options.address, credentials) as unknown as grpc.Client &
    Record<string, UnaryMethod>;

  const transport: Transport = {
    unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: ConstructorParameters<typeof Headers>[0] | undefined,
      input: unknown,
    ): Promise<UnaryResponse<I, O>> {
      const md = new grpc.Metadata();
      if (options.token) md.set('authorization', `Bearer ${options.token}`);
      new Headers(header).forEach((value, key) => {
        if (!key.endsWith('-bin')) md.set(key, value);
      });
      const deadlineMs = timeoutMs ?? options.timeoutMs;
      const callOptions: grpc.CallOptions =
        deadlineMs !== undefined && deadlineMs > 0 ? { deadline: Date.now() + deadlineMs } : {};
      return new Promise((resolve, reject) => {
        let responseHeader = new Headers();
        const onAbort = (): void => call.cancel();
        const call = channel[method.localName]!.call(channel, input, md, callOptions, (err, res) => {
          signal?.removeEventListener('abort', onAbort);
          if (err) {
            reject(new ConnectError(err.details, err.code as number as Code, headersOf(err.metadata)));
            return;
          }
          resolve({
            stream: false,
            service,
            method,
            header: responseHeader,
            message: res as MessageShape<O>,
            trailer: new Headers(),
          });
        });
        call.on('metadata', (m: grpc.Metadata) => (responseHeader = headersOf(m)));
        signal?.addEventListener('abort', onAbort, { once: true });
        if (signal?.aborted) call.cancel();
      });
    },
    stream() {
      return Promise.reject(
        new ConnectError('streaming calls are not offered by this client', Code.Unimplemented),
      );
    },
  };
  return { client: createClient(service, transport), close: () => channel.close() };
}
