/**
 * What a load test reads about a service process from outside (Linux /proc and its /metrics): its
 * resident memory, its open file descriptors sorted by what they lead to (clients connected to its
 * ports, connections to each peer, the rest), and the RPCs it says are open.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { execFile } from 'node:child_process';
import http from 'node:http';
import { promisify } from 'node:util';

/** Resident set size of `pid`, in bytes (VmRSS of /proc/<pid>/status). */
export function rssBytes(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) * 1024;
}

/** Open descriptors of a process, by what they lead to. */
export interface DescriptorCounts {
  /** Every open descriptor. */
  total: number;
  /** TCP connections accepted on one of the process's own ports (`ownPorts`), listeners excluded. */
  inbound: number;
  /** TCP connections to each named peer port (`peers`), in any state. */
  outbound: Record<string, number>;
  /** Everything else: files, pipes, event fds, listeners, other sockets. */
  other: number;
}

/** TCP sockets of the network namespace of `pid` by inode: local port, remote port, state (hex). */
function tcpSockets(pid: number): Map<string, { local: number; remote: number; state: string }> {
  const sockets = new Map<string, { local: number; remote: number; state: string }>();
  for (const file of ['tcp', 'tcp6']) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/net/${file}`, 'utf8');
    } catch {
      continue; // no IPv6 in this namespace
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10) continue;
      const port = (addr: string) => parseInt(addr.slice(addr.lastIndexOf(':') + 1), 16);
      sockets.set(cols[9]!, { local: port(cols[1]!), remote: port(cols[2]!), state: cols[3]! });
    }
  }
  return sockets;
}

// /proc/net/tcp state of a listening socket.
const TCP_LISTEN = '0A';

/**
 * Counts the open descriptors of `pid`: connections accepted on `ownPorts` (clients), connections
 * to each of `peers` (name -> remote port), and the rest. Descriptors that close while being read
 * are skipped.
 */
export function descriptorCounts(
  pid: number,
  ownPorts: readonly number[],
  peers: Record<string, number>,
): DescriptorCounts {
  const sockets = tcpSockets(pid);
  const counts: DescriptorCounts = { total: 0, inbound: 0, outbound: {}, other: 0 };
  for (const name of Object.keys(peers)) counts.outbound[name] = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let target: string;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue;
    }
    counts.total++;
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    const tcp = inode === undefined ? undefined : sockets.get(inode);
    if (tcp && tcp.state !== TCP_LISTEN && ownPorts.includes(tcp.local)) {
      counts.inbound++;
      continue;
    }
    const peer = tcp && Object.entries(peers).find(([, port]) => port === tcp.remote)?.[0];
    if (peer !== undefined && peer !== '') counts.outbound[peer]!++;
    else counts.other++;
  }
  return counts;
}

/**
 * GETs `url` over a connection of its own that closes after the answer (`Connection: close`), so
 * a probe leaves no keep-alive connection behind to be counted among the clients of the process.
 */
export function getOnce(url: string, timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url} within ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

/** The sum of a Prometheus sample family at `url` over the series whose labels contain `labelMatch`. */
export async function metricSum(url: string, name: string, labelMatch = ''): Promise<number> {
  const text = await getOnce(url);
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (labelMatch && !line.includes(labelMatch)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** The inspector URL (`ws://...`) a process started with `--inspect=127.0.0.1:0` printed to `logs`. */
export function inspectorUrl(logs: readonly string[]): string {
  for (const line of logs) {
    const m = /Debugger listening on (ws:\/\/\S+)/.exec(line);
    if (m) return m[1]!;
  }
  throw new Error('the process printed no inspector URL (was it started with --inspect?)');
}

// Node 20 has WebSocket only behind a flag, and the test runner's own process does not have it: a
// short child process speaks to the inspector instead.
const COLLECT_GARBAGE = `
const ws = new WebSocket(process.argv[1]);
const fail = (why) => { console.error(why); process.exit(1); };
setTimeout(() => fail('no answer from the inspector'), 30000).unref();
ws.onerror = () => fail('cannot reach the inspector');
ws.onopen = () => ws.send(JSON.stringify({ id: 1, method: 'HeapProfiler.collectGarbage' }));
ws.onmessage = (event) => {
  const msg = JSON.parse(event.data);
  if (msg.id !== 1) return;
  if (msg.error) fail(JSON.stringify(msg.error));
  ws.close();
  process.exit(0);
};`;

/**
 * Runs a full garbage collection in the process whose inspector listens at `url`
 * (HeapProfiler.collectGarbage of the Chrome DevTools Protocol), so that memory read next is what
 * the process keeps, not garbage it has not collected yet.
 */
export async function collectGarbage(url: string): Promise<void> {
  await promisify(execFile)(process.execPath, ['--experimental-websocket', '-e', COLLECT_GARBAGE, url], {
    timeout: 40_000,
  });
}

/** Memory of a process as its resident set and its V8 heap in use. */
export interface MemoryReading {
  rss: number;
  heapUsed: number;
}

/**
 * RSS and V8 heap in use (`nodejs_heap_size_used_bytes` at `metricsUrl`) of `pid` right after two
 * full collections through its inspector at `inspector` (the second also frees what the first's
 * finalizers released): what the process keeps, without the garbage of the collector's cycle.
 */
export async function memoryAfterGc(
  pid: number,
  inspector: string,
  metricsUrl: string,
): Promise<MemoryReading> {
  await collectGarbage(inspector);
  await collectGarbage(inspector);
  return { rss: rssBytes(pid), heapUsed: await metricSum(metricsUrl, 'nodejs_heap_size_used_bytes') };
}
