/**
 * `PushDriver`: what every push backend offers. A push driver is the push channel's `DeliveryDriver`
 * plus `sendBatch` (many messages over the backend's one HTTP/2 session) and a health probe.
 */
import { setMaxListeners } from 'node:events';
import { performance } from 'node:perf_hooks';
import type { DeliveryDriver, DriverSendContext, SendOutcome } from '../../delivery/driver';
import type { BackendHealthResult } from '../backend-registry';
import type { Http2Client } from './http2-client';
import type { PushPayload } from './push-payload';

/** A push backend. */
export interface PushDriver extends DeliveryDriver<PushPayload> {
  readonly channel: 'push';
  /** The largest notification payload the provider takes, in bytes of its JSON. */
  readonly maxPayloadBytes: number;
  /**
   * Sends every message, in provider-sized chunks over the one session, and returns one outcome per
   * message in order. Never throws for a provider's answer; a failure of one message is its outcome.
   */
  sendBatch(payloads: readonly PushPayload[], ctx: DriverSendContext): Promise<SendOutcome[]>;
  /** The provider JSON of one message, for the size check before anything is recorded. */
  payloadBytes(payload: PushPayload): number;
  /** HTTP/2 sessions opened so far. */
  readonly sessionsOpened: number;
  /** Connects (if needed) to the provider; never throws. The details add `sessions_opened`. */
  checkHealth(): Promise<BackendHealthResult>;
}

/**
 * The health probe of an HTTP/2 push backend: the session to the provider opens (or is open). A
 * provider that cannot be reached is `degraded`; never throws.
 */
export async function probeSession(
  driver: Pick<PushDriver, 'name' | 'driver'>,
  client: Http2Client,
): Promise<BackendHealthResult> {
  const t0 = performance.now();
  const details = () => ({
    backend: driver.name,
    driver: driver.driver,
    latency_ms: Math.round(performance.now() - t0),
    sessions_opened: client.sessionsOpened,
  });
  try {
    await client.connect();
    return { status: 'healthy', details: details() };
  } catch {
    return { status: 'degraded', details: details(), message: 'cannot connect to the provider' };
  }
}

/** Runs `fn` over `items` with at most `limit` at once, results in input order. */
export async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}

/**
 * The context of the requests of one batch: one signal of our own, aborted with the caller's, that
 * may carry a listener per stream in flight (`streams`) without Node's leak warning; the caller's
 * signal gets one listener. `done` removes it.
 */
export function batchContext(
  ctx: DriverSendContext,
  streams: number,
): { ctx: DriverSendContext; done: () => void } {
  const controller = new AbortController();
  setMaxListeners(streams + 16, controller.signal);
  const forward = () => controller.abort(ctx.signal.reason);
  if (ctx.signal.aborted) forward();
  else ctx.signal.addEventListener('abort', forward, { once: true });
  return {
    ctx: { ...ctx, signal: controller.signal },
    done: () => ctx.signal.removeEventListener('abort', forward),
  };
}
