/**
 * Loopback ports handed out before anything listens on them: a peer that must be down when the
 * service starts, a backend that must meet connection refused, a service told its port in advance.
 *
 * Why not "listen on 0, note the port, close": that port comes from the kernel's ephemeral range,
 * the same range every other `listen(0)` of the parallel test workers and every outbound
 * connection's source port draws from. Under a loaded CI run another test's server took such a
 * port (a "refused" SMTP backend answered as someone else's server and failed for good; a peer
 * restarted on its port met EADDRINUSE), and a connect to a port nobody listens on can even meet
 * itself (TCP simultaneous open). Ports below the ephemeral range are never handed out by the
 * kernel, so only this helper gives them out: each Jest worker gets its own stripe and walks it, so
 * two workers never hand out the same port and one worker never hands one out twice in a row.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** The lowest port the kernel hands out on its own (Linux default 32768). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 1024 ? low : 32768;
  } catch {
    return 32768;
  }
}

const FLOOR = 20000;
const STRIPES = 16;
const ceiling = Math.max(FLOOR + STRIPES * 64, ephemeralLow());
const stripeSize = Math.floor((ceiling - FLOOR) / STRIPES);
const worker = (Number(process.env.JEST_WORKER_ID ?? '1') - 1 + STRIPES) % STRIPES;
const stripeStart = FLOOR + worker * stripeSize;
// Start at a random place in the stripe so consecutive test files of one worker do not replay ports.
let cursor = Math.floor(Math.random() * stripeSize);

/** Whether `port` can be bound on 127.0.0.1 right now (another program on the machine may hold it). */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** A loopback port nothing listens on, that no `listen(0)` and no outbound connection will take. */
export async function reservePort(): Promise<number> {
  for (let tries = 0; tries < stripeSize; tries++) {
    const port = stripeStart + (cursor++ % stripeSize);
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port in ${stripeStart}..${stripeStart + stripeSize - 1}`);
}

/** A port where a connection meets connection refused (the same thing, named for what it is for). */
export const refusedPort = reservePort;
