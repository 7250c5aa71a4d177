/**
 * Benchmark of the admin gateway: requests per second of `GET /admin/notifications/inbox` (the JWT
 * verified on every request) against the Connect JSON `GetInbox` call on the same data, same
 * concurrency, same run. The caller (test/bench/run.ts) seeds the user's inbox with 10 messages,
 * starts the service and passes a function that performs one Connect JSON GetInbox call.
 */
import { Agent, request } from 'node:http';
import type { BenchRow } from './measure';

/** Inputs of runAdminBench. */
export interface AdminBenchOptions {
  /** e.g. `http://127.0.0.1:8080` (no trailing slash). */
  gatewayBaseUrl: string;
  /** One Connect JSON GetInbox call for the same user and data. */
  connectGetInbox: () => Promise<unknown>;
  /** A bearer token for the seeded user. */
  token: string;
  /** Calls in flight for both sides; default 32. */
  concurrency?: number;
  /** Measured time per side and round; default 2000 ms (two rounds, interleaved). */
  durationMs?: number;
  /** Unmeasured warm-up per side; default 500 ms. */
  warmupMs?: number;
}

/** Measures both sides in interleaved rounds and returns one row: gateway requests/s vs Connect calls/s. */
export async function runAdminBench(opts: AdminBenchOptions): Promise<BenchRow[]> {
  const concurrency = opts.concurrency ?? 32;
  const durationMs = opts.durationMs ?? 2000;
  const warmupMs = opts.warmupMs ?? 500;
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const url = new URL('/admin/notifications/inbox?limit=10', opts.gatewayBaseUrl);
  const gatewayCall = (): Promise<void> => getInbox(agent, url, opts.token);

  try {
    // Fail loudly before measuring if the gateway does not answer 200 with the seeded messages.
    const first = JSON.parse(await getBody(agent, url, opts.token)) as { notifications?: unknown[] };
    if (!Array.isArray(first.notifications) || first.notifications.length === 0) {
      throw new Error('admin bench: the gateway inbox is empty; seed 10 messages for the token subject');
    }
    await measure(gatewayCall, concurrency, warmupMs);
    await measure(opts.connectGetInbox, concurrency, warmupMs);

    const gateway: number[] = [];
    const connect: number[] = [];
    for (let round = 0; round < 2; round += 1) {
      // Alternate the order so drift on a busy machine does not favour one side.
      if (round % 2 === 0) {
        gateway.push(await measure(gatewayCall, concurrency, durationMs));
        connect.push(await measure(opts.connectGetInbox, concurrency, durationMs));
      } else {
        connect.push(await measure(opts.connectGetInbox, concurrency, durationMs));
        gateway.push(await measure(gatewayCall, concurrency, durationMs));
      }
    }
    const value = mean(gateway);
    const baseline = mean(connect);
    return [
      {
        name: `admin GET /admin/notifications/inbox (JWT each request) req/s vs Connect JSON GetInbox, ${concurrency} in flight`,
        value: Math.round(value),
        baseline: Math.round(baseline),
        ratio: Number((value / baseline).toFixed(3)),
        target: 'none set (issue 5 asks for the ratio)',
      },
    ];
  } finally {
    agent.destroy();
  }
}

/** Runs `call` with `concurrency` workers for `durationMs`; returns completed calls per second. */
async function measure(
  call: () => Promise<unknown>,
  concurrency: number,
  durationMs: number,
): Promise<number> {
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(durationMs) * 1_000_000n;
  let completed = 0;
  const worker = async (): Promise<void> => {
    while (process.hrtime.bigint() < deadline) {
      await call();
      completed += 1;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return completed / seconds;
}

function getInbox(agent: Agent, url: URL, token: string): Promise<void> {
  return getBody(agent, url, token).then(() => undefined);
}

function getBody(agent: Agent, url: URL, token: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent, headers: { Authorization: `Bearer ${token}` } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`admin bench: GET inbox answered ${res.statusCode}`));
        else resolve(Buffer.concat(chunks).toString('utf8'));
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

function mean(values: number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}
