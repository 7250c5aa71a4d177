/**
 * The two real service processes the interop suite talks to: notification (its stores on a fresh
 * database of the run's PostgreSQL) and monitor, both started with `node dist/...` on loopback ports
 * and both with RPC tokens on, as in production. Each service's surface comes from
 * test/reliability/surfaces.ts, so a suite walks every service the process registers.
 */
import { smsServiceEnv } from '../../support/sms-service';
import type { DescService } from '@bufbuild/protobuf';

import { createTestDatabase } from '../../support/database';
import { startServiceProcess, type ServiceProcess } from '../../support/service-process';
import { MONITOR_SERVICES, NOTIFICATION_SERVICES } from '../surfaces';

/** The bearer token both processes accept (not a real secret: a test value). */
export const TOKEN = 'interop-token-7f3a';

/** `authorization` header value for {@link TOKEN}. */
export const AUTHORIZATION = `Bearer ${TOKEN}`;

/** One started process and what it serves. */
export interface Target {
  readonly name: 'notification' | 'monitor';
  readonly proc: ServiceProcess;
  readonly services: readonly DescService[];
  /** `127.0.0.1:<grpc port>`. */
  readonly grpcAddress: string;
  /** `http://127.0.0.1:<http port>`. */
  readonly baseUrl: string;
}

/** Both processes, and a function that stops them and drops the database. */
export interface Targets {
  readonly all: readonly Target[];
  stop(): Promise<void>;
}

function target(name: Target['name'], proc: ServiceProcess, services: readonly DescService[]): Target {
  return {
    name,
    proc,
    services,
    grpcAddress: `127.0.0.1:${proc.grpcPort}`,
    baseUrl: `http://127.0.0.1:${proc.httpPort}`,
  };
}

/** Starts notification and monitor (concurrently) with tokens on. */
export async function startTargets(): Promise<Targets> {
  const db = await createTestDatabase('interop');
  const started = await Promise.allSettled([
    startServiceProcess('notification', {
      SVC_NOTIFICATION__SERVER__API_TOKENS: TOKEN,
      SVC_NOTIFICATION__DATABASE__URL: db.url,
      // One SMS backend, so a send is recorded and WatchDeliveries has an event to carry; nothing
      // listens on the discard port, so its attempts just retry.
      ...smsServiceEnv({ baseUrl: 'http://127.0.0.1:9' }),
    }),
    startServiceProcess('monitor', { SVC_MONITOR__SERVER__API_TOKENS: TOKEN }),
  ]);
  const procs = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const stop = async (): Promise<void> => {
    await Promise.all(procs.map((p) => p.stop()));
    await db.drop();
  };
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    await stop();
    throw failed.reason;
  }
  const [notification, monitor] = procs as [ServiceProcess, ServiceProcess];
  return {
    all: [
      target('notification', notification, NOTIFICATION_SERVICES),
      target('monitor', monitor, MONITOR_SERVICES),
    ],
    stop,
  };
}

/** The process's /metrics text (open: no metrics token is configured here). */
export async function scrape(t: Target): Promise<string> {
  return (await fetch(`${t.baseUrl}/metrics`)).text();
}

/** The sum of the samples of `metric` whose labels include every one of `labels` (`name="value"`). */
export function sumOf(text: string, metric: string, labels: readonly string[]): number {
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${metric}{`) && labels.every((label) => l.includes(label)))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

/** Answers the process counted as INTERNAL or UNKNOWN (`rpc_server_handled_total`), on both ports. */
export async function serverFaults(t: Target): Promise<number> {
  const text = await scrape(t);
  return (
    sumOf(text, 'rpc_server_handled_total', ['rpc_code="internal"']) +
    sumOf(text, 'rpc_server_handled_total', ['rpc_code="unknown"'])
  );
}

/** Calls of `path` (`pkg.Service/Method`) in flight now: an open stream counts until it ends. */
export async function inFlight(t: Target, path: string): Promise<number> {
  const [service, method] = path.split('/') as [string, string];
  return sumOf(await scrape(t), 'rpc_server_in_flight', [
    `rpc_service="${service}"`,
    `rpc_method="${method}"`,
  ]);
}
