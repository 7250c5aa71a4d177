/**
 * A gRPC health probe for containers and orchestrators without a gRPC probe of their own:
 *
 *   node dist/shared/runtime/health-probe.js [host:port] [service]
 *
 * asks `grpc.health.v1.Health/Check` (the client built from grpc-health-check's own service
 * definition) and exits 0 when the answer is SERVING, 1 for any other status, an error or no answer
 * within the timeout, and 2 for bad arguments. The address defaults to `127.0.0.1:50051` (the
 * notification service's default gRPC port); `service` defaults to "" (the whole server).
 *
 * It reads only its arguments (the config loader is the only reader of the environment), so the
 * Dockerfile passes the port on the command line.
 */
import * as grpc from '@grpc/grpc-js';
import { service as healthServiceDefinition } from 'grpc-health-check';

/** Address probed when none is given: the notification service's default gRPC port on loopback. */
export const DEFAULT_PROBE_ADDRESS = '127.0.0.1:50051';

/** How long one probe waits for an answer, connection included. */
export const PROBE_TIMEOUT_MS = 3000;

/** What a probe found: the serving status name, or why there is none. */
export type ProbeResult = { ok: true; status: string } | { ok: false; error: string };

const HealthClient = grpc.makeGenericClientConstructor(healthServiceDefinition as never, 'Health');

type CheckFn = (
  request: { service: string },
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: (err: grpc.ServiceError | null, response?: { status?: string }) => void,
) => grpc.ClientUnaryCall;

/**
 * Asks `address` for the serving status of `service` ("" = the whole server). Never throws: an
 * unreachable server or a deadline is an `{ ok: false }` result naming the gRPC status.
 */
export async function probeGrpcHealth(
  address: string,
  service = '',
  timeoutMs = PROBE_TIMEOUT_MS,
): Promise<ProbeResult> {
  const client = new HealthClient(address, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
    check: CheckFn;
  };
  try {
    return await new Promise<ProbeResult>((resolve) => {
      client.check(
        { service },
        new grpc.Metadata(),
        // grpc-js does not wait for ready by default: a closed port fails at once (UNAVAILABLE).
        { deadline: Date.now() + timeoutMs },
        (err, response) => {
          if (err) resolve({ ok: false, error: `${grpc.status[err.code] ?? err.code}: ${err.details}` });
          else resolve({ ok: true, status: String(response?.status ?? 'UNKNOWN') });
        },
      );
    });
  } finally {
    client.close();
  }
}

const ADDRESS = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/;

/**
 * The probe's command line: returns the exit code (0 SERVING, 1 not serving or unreachable, 2 bad
 * arguments) and writes one line saying what it found to `write`.
 */
export async function runHealthProbe(
  args: readonly string[],
  write: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<number> {
  if (args.length > 2 || args.some((a) => a === '-h' || a === '--help')) {
    write('usage: health-probe [host:port] [service]');
    return 2;
  }
  const address = args[0] ?? DEFAULT_PROBE_ADDRESS;
  const service = args[1] ?? '';
  if (!ADDRESS.test(address)) {
    write(`health-probe: expected host:port such as 127.0.0.1:50051, got ${JSON.stringify(address)}`);
    return 2;
  }
  const result = await probeGrpcHealth(address, service);
  const what = `${address}${service ? ` (${service})` : ''}`;
  if (result.ok && result.status === 'SERVING') {
    write(`health-probe: ${what} SERVING`);
    return 0;
  }
  write(`health-probe: ${what} ${result.ok ? result.status : `unreachable: ${result.error}`}`);
  return 1;
}

if (require.main === module) {
  void runHealthProbe(process.argv.slice(2)).then((code) => process.exit(code));
}
