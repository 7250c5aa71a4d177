/**
 * The two probes of a watched target: the standard gRPC health `Check` (grpc-health-check's client
 * definition over a real grpc-js channel, with a deadline) and an HTTP GET of a health URL (timeout,
 * 2xx is up, at most {@link MAX_HTTP_BODY_BYTES} of the body read). Each resolves to an outcome and
 * never rejects: a failure carries a short reason (a status or error name, never a message or stack),
 * which the status page and the alerts show.
 */
import * as grpc from '@grpc/grpc-js';
import { context, propagation } from '@opentelemetry/api';
import { service as healthServiceDefinition } from 'grpc-health-check';
import { boundedRequest, isAnswer } from '../../../shared/http/outbound';

/** The result of one probe. */
export type ProbeOutcome = { ok: true } | { ok: false; reason: string };

/** Bytes of an HTTP health answer read before the connection is closed; the rest is never read. */
export const MAX_HTTP_BODY_BYTES = 4096;

const HealthClient = grpc.makeGenericClientConstructor(healthServiceDefinition as never, 'Health');

interface HealthCheckResponse {
  status: string;
}

type CheckMethod = (
  request: { service: string },
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: (err: grpc.ServiceError | null, res?: HealthCheckResponse) => void,
) => grpc.ClientUnaryCall;

/**
 * A gRPC health prober of one address: one channel for the life of the target, so probes reuse the
 * connection. The reconnect backoff is capped at the probe interval: grpc-js's default (up to 120 s)
 * would keep a restarted target "down" for minutes after it came back.
 */
export class GrpcHealthProbe {
  private readonly client: grpc.Client;

  constructor(address: string, intervalMs: number) {
    const backoffMs = Math.max(50, Math.min(intervalMs, 1000));
    this.client = new HealthClient(address, grpc.credentials.createInsecure(), {
      'grpc.initial_reconnect_backoff_ms': backoffMs,
      'grpc.max_reconnect_backoff_ms': Math.max(backoffMs, intervalMs),
      // A probe is one attempt: a retried probe would hide the failure it is there to see.
      'grpc.enable_retries': 0,
    });
  }

  /** `Check` for service "" with a deadline of `timeoutMs`; SERVING is up. */
  check(timeoutMs: number, signal: AbortSignal): Promise<ProbeOutcome> {
    return new Promise((resolve) => {
      const check = (this.client as unknown as { check: CheckMethod }).check;
      const call = check.call(
        this.client,
        { service: '' },
        new grpc.Metadata(),
        { deadline: Date.now() + timeoutMs },
        (err, res) => {
          signal.removeEventListener('abort', onAbort);
          if (err) resolve({ ok: false, reason: grpcReason(err.code) });
          else if (res?.status === 'SERVING') resolve({ ok: true });
          else resolve({ ok: false, reason: res?.status ?? 'UNKNOWN' });
        },
      );
      const onAbort = (): void => call.cancel();
      signal.addEventListener('abort', onAbort, { once: true });
      if (signal.aborted) onAbort();
    });
  }

  /** Closes the channel. */
  close(): void {
    this.client.close();
  }
}

function grpcReason(code: grpc.status): string {
  if (code === grpc.status.DEADLINE_EXCEEDED) return 'timeout';
  return grpc.status[code] ?? 'UNKNOWN';
}

/**
 * GET `url` with a timeout of `timeoutMs`; 2xx is up. At most {@link MAX_HTTP_BODY_BYTES} of the body
 * are read, then the connection is closed, so a health endpoint that streams forever cannot hold a
 * probe or fill memory. The current trace context is sent along (`traceparent`), and `extraHeaders`
 * (the target's `headers` and `bearer_token`: a protected `/health` needs its token).
 */
export async function probeHttp(
  url: string,
  timeoutMs: number,
  signal: AbortSignal,
  extraHeaders: Readonly<Record<string, string>> = {},
): Promise<ProbeOutcome> {
  const headers: Record<string, string> = { accept: 'application/json, text/plain, */*', ...extraHeaders };
  propagation.inject(context.active(), headers);
  // No keep-alive: one short connection per probe (the one bounded request, shared/http/outbound.ts).
  const result = await boundedRequest({
    method: 'GET',
    url,
    headers,
    agent: false,
    timeoutMs,
    maxBodyBytes: MAX_HTTP_BODY_BYTES,
    signal,
  });
  if (!isAnswer(result)) {
    if (result.kind === 'aborted') return { ok: false, reason: 'stopped' };
    if (result.kind === 'timeout') return { ok: false, reason: 'timeout' };
    return { ok: false, reason: result.code ?? 'connection failed' };
  }
  return result.status >= 200 && result.status < 300
    ? { ok: true }
    : { ok: false, reason: `HTTP ${result.status}` };
}
