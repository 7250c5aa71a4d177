/**
 * Real grpc-js clients for tests: for our services (from the protobuf-es descriptors), the standard
 * health service (grpc-health-check's own definition) and server reflection.
 */
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { join, dirname } from 'node:path';
import type { DescService } from '@bufbuild/protobuf';
import { service as healthServiceDefinition } from 'grpc-health-check';
import { createGrpcServiceDefinition } from '../../shared/rpc/grpc-adapter';

export type GenericClient = grpc.Client & Record<string, (...args: unknown[]) => unknown>;

/** A grpc-js client for one of our services; methods are the descriptor's localNames (`echo`). */
export function grpcClient(
  service: DescService,
  address: string,
  options?: grpc.ChannelOptions,
): GenericClient {
  const Ctor = grpc.makeGenericClientConstructor(createGrpcServiceDefinition(service), service.name);
  return new Ctor(address, grpc.credentials.createInsecure(), options) as unknown as GenericClient;
}

/** Promisified unary call with optional metadata and deadline. */
export function unary<T>(
  client: GenericClient,
  method: string,
  request: unknown,
  opts: { metadata?: Record<string, string>; deadlineMs?: number } = {},
): Promise<{ response: T; header: grpc.Metadata; trailer: grpc.Metadata }> {
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(opts.metadata ?? {})) md.set(k, v);
  const callOpts: grpc.CallOptions = opts.deadlineMs ? { deadline: Date.now() + opts.deadlineMs } : {};
  return new Promise((resolve, reject) => {
    let header = new grpc.Metadata();
    let outcome: { err: grpc.ServiceError | null; res: T } | undefined;
    const fn = client[method] as unknown as (
      req: unknown,
      md: grpc.Metadata,
      opts: grpc.CallOptions,
      cb: (err: grpc.ServiceError | null, res: T) => void,
    ) => grpc.ClientUnaryCall;
    const call = fn.call(client, request, md, callOpts, (err, res) => (outcome = { err, res }));
    call.on('metadata', (m) => (header = m));
    // The status (with trailers) is emitted after the callback ran: settle there.
    call.on('status', (s) => {
      if (!outcome || outcome.err) reject(outcome?.err ?? new Error(s.details));
      else resolve({ response: outcome.res, header, trailer: s.metadata });
    });
  });
}

export const HealthClient = grpc.makeGenericClientConstructor(healthServiceDefinition as never, 'Health');

export function healthClient(address: string): GenericClient {
  return new HealthClient(address, grpc.credentials.createInsecure()) as unknown as GenericClient;
}

/** `grpc.health.v1.Health/Check` through the grpc-health-check client; resolves with the status name. */
export function healthCheck(client: GenericClient, service = ''): Promise<string> {
  const check = client.check as unknown as (
    req: unknown,
    cb: (err: grpc.ServiceError | null, res: { status: string }) => void,
  ) => void;
  return new Promise((resolve, reject) =>
    check.call(client, { service }, (err, res) => (err ? reject(err) : resolve(res.status))),
  );
}

/** Asks server reflection (v1) for the list of services (with `token` when the server has API tokens). */
export async function listServicesByReflection(address: string, token?: string): Promise<string[]> {
  const reflectionDir = dirname(require.resolve('@grpc/reflection/package.json'));
  const def = loadSync(join(reflectionDir, 'build/proto/grpc/reflection/v1/reflection.proto'), {
    keepCase: true,
  });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    grpc: { reflection: { v1: { ServerReflection: grpc.ServiceClientConstructor } } };
  };
  const client = new pkg.grpc.reflection.v1.ServerReflection(address, grpc.credentials.createInsecure());
  // With API tokens on, reflection needs one (any scope).
  const metadata = new grpc.Metadata();
  if (token !== undefined) metadata.set('authorization', `Bearer ${token}`);
  try {
    return await new Promise<string[]>((resolve, reject) => {
      const call = (
        client as unknown as {
          ServerReflectionInfo(md: grpc.Metadata): grpc.ClientDuplexStream<unknown, unknown>;
        }
      ).ServerReflectionInfo(metadata);
      call.on('data', (res: { list_services_response?: { service: Array<{ name: string }> } }) => {
        resolve((res.list_services_response?.service ?? []).map((s) => s.name));
        call.end();
      });
      call.on('error', reject);
      call.write({ list_services: '' });
    });
  } finally {
    client.close();
  }
}
