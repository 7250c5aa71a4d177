/**
 * The SMTP peer of ./smtp-peer.ts in a child process of its own, for the benchmark: a relay that
 * shares the event loop of the load generator answers late whenever the generator is busy, which
 * would charge the generator's work to whatever it measures. Runs from the compiled build only
 * (`dist/test/support/smtp-peer-process.js`), as the benchmarks do.
 */
import { fork, type ChildProcess } from 'node:child_process';

import { createSmtpPeer } from './smtp-peer';

type Request =
  { id: number; op: 'whenAccepted'; n: number } | { id: number; op: 'count' | 'pause' | 'resume' };
type Reply = { id: number; count: number } | { port: number };

/** The peer's controls, over IPC. */
export interface SmtpPeerProcess {
  port: number;
  /** The peer process's pid (the benchmark reads its CPU time from /proc). */
  pid: number | undefined;
  /** Messages accepted so far. */
  count(): Promise<number>;
  /** Resolves once the peer has accepted `n` messages in all. */
  whenAccepted(n: number): Promise<number>;
  /** Holds every answer to DATA until `resume()` (see SmtpPeer.pause). */
  pause(): Promise<number>;
  resume(): Promise<number>;
  stop(): Promise<void>;
}

/** Forks the peer process and waits for its port. */
export async function startSmtpPeerProcess(): Promise<SmtpPeerProcess> {
  const child: ChildProcess = fork(__filename, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const pending = new Map<number, (count: number) => void>();
  let nextId = 0;
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`SMTP peer process exited with ${code}`)));
    child.on('message', (m: Reply) => {
      if ('port' in m) resolve(m.port);
      else pending.get(m.id)?.(m.count);
    });
  });
  const ask = (op: Request['op'], n = 0): Promise<number> =>
    new Promise((resolve) => {
      const id = nextId++;
      pending.set(id, (count) => {
        pending.delete(id);
        resolve(count);
      });
      child.send({ id, op, n });
    });
  return {
    port,
    pid: child.pid,
    count: () => ask('count'),
    whenAccepted: (n) => ask('whenAccepted', n),
    pause: () => ask('pause'),
    resume: () => ask('resume'),
    async stop() {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The child: a peer that parses nothing, counts, and answers the parent. */
async function main(): Promise<void> {
  const peer = createSmtpPeer({ parse: false });
  await peer.start();
  const reply = (id: number): void => void process.send!({ id, count: peer.acceptedCount });
  process.on('message', (m: Request) => {
    if (m.op === 'whenAccepted') void peer.whenAccepted(m.n).then(() => reply(m.id));
    else {
      if (m.op === 'pause') peer.pause();
      if (m.op === 'resume') peer.resume();
      reply(m.id);
    }
  });
  process.on('SIGTERM', () => void peer.stop().then(() => process.exit(0)));
  process.send!({ port: peer.port });
}

if (require.main === module && process.send) void main();
