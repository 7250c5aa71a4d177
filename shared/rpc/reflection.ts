/**
 * gRPC server reflection (`@grpc/reflection`) built from the protobuf-es descriptors we serve, plus
 * the health protocol's own descriptor, so grpcurl and similar tools can list and call everything.
 */
import type { Server } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { toBinary, type DescFile, type DescService } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import { protoPath as healthProtoPath } from 'grpc-health-check';

function collectFiles(file: DescFile, into: Map<string, DescFile>): void {
  if (into.has(file.name)) return;
  into.set(file.name, file);
  for (const dep of file.dependencies) collectFiles(dep, into);
}

/** Registers reflection (v1 and v1alpha) for `services` and grpc.health.v1 on `server`. */
export function addReflection(server: Server, services: readonly DescService[]): void {
  const files = new Map<string, DescFile>();
  for (const s of services) collectFiles(s.file, files);
  const ours = [...files.values()].map((f) => Buffer.from(toBinary(FileDescriptorProtoSchema, f.proto)));
  const health = loadSync(healthProtoPath, { keepCase: true });
  const root = { ...health, 'svc.descriptors': { fileDescriptorProtos: ours } };
  const names = [...services.map((s) => s.typeName), 'grpc.health.v1.Health'];
  new ReflectionService(root as never, { services: names }).addToServer(server);
}
