/**
 * gRPC server reflection (`@grpc/reflection`) built from the protobuf-es descriptors we serve, plus
 * the health protocol's descriptor, so grpcurl, `buf curl` and similar tools can list, describe and
 * call everything the port lists, with no proto file of ours.
 *
 * The health descriptor is written out here rather than taken from grpc-health-check's proto through
 * proto-loader: protobufjs emits relative type names and misnamed map entries in the descriptors it
 * builds, which strict clients (buf, grpcurl: Go's protodesc) refuse, so they could list
 * `grpc.health.v1.Health` but never describe or call it.
 */
import type { Server } from '@grpc/grpc-js';
import { ReflectionService } from '@grpc/reflection';
import { create, toBinary, type DescFile, type DescService } from '@bufbuild/protobuf';
import {
  FieldDescriptorProto_Label as Label,
  FieldDescriptorProto_Type as Type,
  FileDescriptorProtoSchema,
  type FileDescriptorProto,
} from '@bufbuild/protobuf/wkt';

/** The fully-qualified name of the standard health service. */
export const HEALTH_SERVICE_NAME = 'grpc.health.v1.Health';

const HEALTH_PACKAGE = '.grpc.health.v1';

/**
 * `grpc/health/v1/health.proto` (grpc-proto, the version grpc-health-check 2.x serves: Check, Watch,
 * List), with fully-qualified type names.
 */
export function healthFileDescriptor(): FileDescriptorProto {
  const optional = (name: string, number: number, type: Type, typeName?: string) => ({
    name,
    number,
    label: Label.OPTIONAL,
    type,
    jsonName: name,
    ...(typeName ? { typeName } : {}),
  });
  return create(FileDescriptorProtoSchema, {
    name: 'grpc/health/v1/health.proto',
    package: 'grpc.health.v1',
    syntax: 'proto3',
    messageType: [
      { name: 'HealthCheckRequest', field: [optional('service', 1, Type.STRING)] },
      {
        name: 'HealthCheckResponse',
        field: [optional('status', 1, Type.ENUM, `${HEALTH_PACKAGE}.HealthCheckResponse.ServingStatus`)],
        enumType: [
          {
            name: 'ServingStatus',
            value: [
              { name: 'UNKNOWN', number: 0 },
              { name: 'SERVING', number: 1 },
              { name: 'NOT_SERVING', number: 2 },
              { name: 'SERVICE_UNKNOWN', number: 3 },
            ],
          },
        ],
      },
      { name: 'HealthListRequest' },
      {
        name: 'HealthListResponse',
        field: [
          {
            ...optional('statuses', 1, Type.MESSAGE, `${HEALTH_PACKAGE}.HealthListResponse.StatusesEntry`),
            label: Label.REPEATED,
          },
        ],
        nestedType: [
          {
            name: 'StatusesEntry',
            field: [
              optional('key', 1, Type.STRING),
              optional('value', 2, Type.MESSAGE, `${HEALTH_PACKAGE}.HealthCheckResponse`),
            ],
            options: { mapEntry: true },
          },
        ],
      },
    ],
    service: [
      {
        name: 'Health',
        method: [
          {
            name: 'Check',
            inputType: `${HEALTH_PACKAGE}.HealthCheckRequest`,
            outputType: `${HEALTH_PACKAGE}.HealthCheckResponse`,
          },
          {
            name: 'List',
            inputType: `${HEALTH_PACKAGE}.HealthListRequest`,
            outputType: `${HEALTH_PACKAGE}.HealthListResponse`,
          },
          {
            name: 'Watch',
            inputType: `${HEALTH_PACKAGE}.HealthCheckRequest`,
            outputType: `${HEALTH_PACKAGE}.HealthCheckResponse`,
            serverStreaming: true,
          },
        ],
      },
    ],
    options: { goPackage: 'google.golang.org/grpc/health/grpc_health_v1' },
  });
}

function collectFiles(file: DescFile, into: Map<string, DescFile>): void {
  if (into.has(file.name)) return;
  into.set(file.name, file);
  for (const dep of file.dependencies) collectFiles(dep, into);
}

/** Registers reflection (v1 and v1alpha) for `services` and grpc.health.v1 on `server`. */
export function addReflection(server: Server, services: readonly DescService[]): void {
  const files = new Map<string, DescFile>();
  for (const s of services) collectFiles(s.file, files);
  const protos = [...[...files.values()].map((f) => f.proto), healthFileDescriptor()].map((proto) =>
    Buffer.from(toBinary(FileDescriptorProtoSchema, proto)),
  );
  const root = { 'svc.descriptors': { fileDescriptorProtos: protos } };
  const names = [...services.map((s) => s.typeName), HEALTH_SERVICE_NAME];
  new ReflectionService(root as never, { services: names }).addToServer(server);
}
