/**
 * test/reliability/surfaces.ts cannot drift from what the processes serve: the services each started
 * process lists through server reflection, plus the reflection services themselves (which answer but
 * do not list themselves), equal NOTIFICATION_SERVICES / MONITOR_SERVICES + PUBLIC_SERVICES. A service
 * registered without being added there (and so skipped by the fuzzer, the auth and the interop
 * checks) fails here, and so does one listed there that the process does not serve.
 */
import { dirname, join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

import { PUBLIC_SERVICES } from '../surfaces';
import { AUTHORIZATION, startTargets, type Target, type Targets } from './processes';

/** Deadline of one reflection call: a hang fails instead of stalling the run. */
const DEADLINE_MS = 20_000;

/** `grpc.reflection.<version>.ServerReflection` from @grpc/reflection's own proto files. */
function reflectionClient(version: string, address: string): grpc.Client {
  const dir = join(dirname(require.resolve('@grpc/reflection/package.json')), 'build', 'proto');
  const def = loadSync(join(dir, 'grpc', 'reflection', version, 'reflection.proto'), { keepCase: true });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    grpc: { reflection: Record<string, { ServerReflection: grpc.ServiceClientConstructor }> };
  };
  return new pkg.grpc.reflection[version]!.ServerReflection(address, grpc.credentials.createInsecure());
}

/** The services `list_services` answers through reflection `version` (with the token: tokens are on). */
async function listServices(version: string, address: string): Promise<string[]> {
  const client = reflectionClient(version, address);
  try {
    return await new Promise<string[]>((resolve, reject) => {
      const call = (
        client as unknown as {
          ServerReflectionInfo(
            md: grpc.Metadata,
            opts: grpc.CallOptions,
          ): grpc.ClientDuplexStream<unknown, unknown>;
        }
      ).ServerReflectionInfo(withToken(), { deadline: Date.now() + DEADLINE_MS });
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

function withToken(): grpc.Metadata {
  const md = new grpc.Metadata();
  md.set('authorization', AUTHORIZATION);
  return md;
}

const REFLECTION = PUBLIC_SERVICES.filter((s) => s.endsWith('.ServerReflection'));

let targets: Targets;
beforeAll(async () => {
  targets = await startTargets();
});
afterAll(async () => {
  await targets?.stop();
});

describe.each([['notification'], ['monitor']])('the %s process', (name) => {
  const target = (): Target => targets.all.find((t) => t.name === name)!;

  test('serves through reflection exactly the services surfaces.ts names for it, plus the public ones', async () => {
    const t = target();
    const answered = new Map<string, string[]>();
    for (const service of REFLECTION) {
      const version = service.split('.')[2]!; // grpc.reflection.<version>.ServerReflection
      answered.set(service, (await listServices(version, t.grpcAddress)).sort());
    }
    // Every reflection version answers, and they agree.
    const lists = [...answered.values()];
    for (const list of lists) expect(list).toEqual(lists[0]);
    const served = [...lists[0]!, ...answered.keys()].sort();
    const expected = [...t.services.map((s) => s.typeName), ...PUBLIC_SERVICES].sort();
    expect(served).toEqual(expected);
  });
});
