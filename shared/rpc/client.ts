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
 * - Unary calls and server streams (the monitor reads WatchInboundSms). A server stream has no
 *   deadline unless the call gives one (it is meant to stay open); its messages are read as they
 *   arrive (grpc-js stops reading from the socket while the consumer is behind), its end or failure
 *   ends the iteration (a ConnectError as for unary calls), and aborting the call's signal cancels it
 *   (Connect's client hides `return()` from the transport, so a `break` alone does not: always pass
 *   a signal and abort it when done). Client and bidirectional streams are not offered.
 * - Keepalive pings while a call is open (`keepalive`): a peer that vanished without closing the
 *   connection fails an open stream UNAVAILABLE instead of leaving it waiting forever.
 */
import * as grpc from '@grpc/grpc-js';
import type {
  DescMessage,
  DescMethodStreaming,
  DescMethodUnary,
  DescService,
  MessageShape,
} from '@bufbuild/protobuf';
import {
  Code,
  ConnectError,
  createClient,
  type Client,
  type StreamResponse,
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
  /**
   * While a call is open, an HTTP/2 ping after `timeMs` without news, and the connection dropped when
   * the answer takes longer than `timeoutMs` ({@link DEFAULT_CLIENT_KEEPALIVE}). A server stream that
   * waits for news (WatchInboundSms) would otherwise wait forever on a peer that vanished without
   * closing the connection (a host gone, a NAT or proxy that dropped the flow): the call now fails
   * UNAVAILABLE and its reader reconnects.
   */
  keepalive?: { timeMs: number; timeoutMs: number };
}

/**
 * The keepalive of every client: 30 s between pings while a call is open (the servers here allow
 * it: grpc-js servers do not police client pings; a grpc-go server's default policy asks for 5 min
 * without calls, and pings only go while a call is open), 10 s for the answer.
 */
export const DEFAULT_CLIENT_KEEPALIVE = { timeMs: 30_000, timeoutMs: 10_000 } as const;

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
type ServerStreamMethod = (
  req: unknown,
  md: grpc.Metadata,
  opts: grpc.CallOptions,
) => grpc.ClientReadableStream<unknown>;

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
  const keepalive = options.keepalive ?? DEFAULT_CLIENT_KEEPALIVE;
  const channel = new Ctor(options.address, credentials, {
    'grpc.keepalive_time_ms': keepalive.timeMs,
    'grpc.keepalive_timeout_ms': keepalive.timeoutMs,
  }) as unknown as grpc.Client & Record<string, UnaryMethod>;

  /** The call's metadata: the token, then the caller's headers (binary ones left out). */
  const metadataOf = (header: ConstructorParameters<typeof Headers>[0] | undefined): grpc.Metadata => {
    const md = new grpc.Metadata();
    if (options.token) md.set('authorization', `Bearer ${options.token}`);
    new Headers(header).forEach((value, key) => {
      if (!key.endsWith('-bin')) md.set(key, value);
    });
    return md;
  };

  const transport: Transport = {
    unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: ConstructorParameters<typeof Headers>[0] | undefined,
      input: unknown,
    ): Promise<UnaryResponse<I, O>> {
      const md = metadataOf(header);
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
    async stream<I extends DescMessage, O extends DescMessage>(
      method: DescMethodStreaming<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: ConstructorParameters<typeof Headers>[0] | undefined,
      input: AsyncIterable<unknown>,
    ): Promise<StreamResponse<I, O>> {
      if (method.methodKind !== 'server_streaming') {
        throw new ConnectError('only server streams are offered by this client', Code.Unimplemented);
      }
      let request: unknown;
      for await (const message of input) request = message;
      const callOptions: grpc.CallOptions =
        timeoutMs !== undefined && timeoutMs > 0 ? { deadline: Date.now() + timeoutMs } : {};
      const open = channel[method.localName] as unknown as ServerStreamMethod;
      const stream = new ServerStream(open.call(channel, request, metadataOf(header), callOptions), signal);
      return {
        stream: true,
        service,
        method,
        header: await stream.header,
        message: stream.messages<MessageShape<O>>(),
        trailer: new Headers(),
      };
    },
  };
  return { client: createClient(service, transport), close: () => channel.close() };
}

/** Messages a server stream buffers before it stops reading from the socket. */
const STREAM_HIGH_WATER = 16;

/**
 * A grpc-js server stream read through its events, attached as soon as the call starts (grpc-js
 * emits a failure as an `error` event after ending the stream, so an iterator made later would see a
 * quiet end): `status` always comes last and ends it; `error` makes it throw.
 */
class ServerStream {
  readonly header: Promise<Headers>;
  private readonly queue: unknown[] = [];
  private ended = false;
  private failure: ConnectError | undefined;
  private wake: (() => void) | null = null;

  constructor(
    private readonly call: grpc.ClientReadableStream<unknown>,
    signal: AbortSignal | undefined,
  ) {
    this.header = new Promise((resolve) => {
      // Headers come first; a call refused at once has none and goes straight to its status.
      call.once('metadata', (m: grpc.Metadata) => resolve(headersOf(m)));
      call.once('status', () => resolve(new Headers()));
    });
    call.on('data', (message: unknown) => {
      this.queue.push(message);
      if (this.queue.length >= STREAM_HIGH_WATER) call.pause();
      this.notify();
    });
    call.on('error', (err: grpc.ServiceError) => {
      this.failure = new ConnectError(err.details, err.code as number as Code, headersOf(err.metadata));
    });
    const onAbort = (): void => call.cancel();
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) call.cancel();
    call.on('status', () => {
      signal?.removeEventListener('abort', onAbort);
      this.ended = true;
      this.notify();
    });
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  async *messages<T>(): AsyncGenerator<T> {
    try {
      for (;;) {
        if (this.queue.length > 0) {
          const message = this.queue.shift() as T;
          if (this.queue.length < STREAM_HIGH_WATER / 2) this.call.resume();
          yield message;
          continue;
        }
        if (this.ended) {
          if (this.failure) throw this.failure;
          return;
        }
        await new Promise<void>((resolve) => (this.wake = resolve));
      }
    } finally {
      // Left early (a break, a throw in the loop body): the call ends with it.
      if (!this.ended) this.call.cancel();
    }
  }
}
