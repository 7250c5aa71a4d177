/**
 * A throwaway PostgreSQL cluster for the test run.
 *
 * Database tests run against real PostgreSQL and never skip silently: either the caller gives a server
 * (`TEST_DATABASE_URL`), or we start Debian's PostgreSQL server from its binaries into a temporary
 * directory. When neither is possible the run fails with a message that says how to fix it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { reservePort } from './ports';

export interface RunningCluster {
  url: string;
  /** Stops the server and removes its directory. */
  stop(): void;
  /** Stops the server (fast shutdown: sessions are ended) and keeps its data, for `restart()`. */
  halt(): void;
  /** Starts a halted server again on the same port, with the same data. */
  restart(): void;
}

function findBinDir(): string {
  const explicit = process.env.PG_BIN_DIR;
  if (explicit) return explicit;
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions.length > 0) return join(root, versions[0]!, 'bin');
  }
  throw new Error(
    'No PostgreSQL server binaries found. Install Debian package `postgresql` (bash .ci/run does) ' +
      'or set TEST_DATABASE_URL=postgres://user:pass@host:port/db to use your own server.',
  );
}

/** Starts a cluster owned by the `postgres` OS user (root cannot run the server itself). */
/** How the throwaway cluster runs. */
export interface ClusterOptions {
  /**
   * Production-like durability (fsync and full-page writes on), for measurements of WAL and CPU per
   * message (`npm run capacity`); tests run with both off, which is faster and loses nothing a test
   * needs.
   */
  durable?: boolean;
  /** More `-c name=value` server settings (e.g. shared_preload_libraries). */
  settings?: Record<string, string>;
}

export async function startCluster(options: ClusterOptions = {}): Promise<RunningCluster> {
  const bin = findBinDir();
  const dir = mkdtempSync(join(tmpdir(), 'svc-pg-'));
  chmodSync(dir, 0o777);
  const data = join(dir, 'data');
  const port = await reservePort();
  const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const run = (cmd: string, args: string[]) =>
    asRoot
      ? execFileSync('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args], { stdio: 'pipe' })
      : execFileSync(join(bin, cmd), args, { stdio: 'pipe' });
  run('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync']);
  const start = () =>
    run('pg_ctl', [
      '-D',
      data,
      '-w',
      '-l',
      join(dir, 'server.log'),
      '-o',
      [
        `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=300`,
        options.durable ? '' : '-c fsync=off -c full_page_writes=off',
        ...Object.entries(options.settings ?? {}).map(([k, v]) => `-c ${k}=${v}`),
      ]
        .filter(Boolean)
        .join(' '),
      'start',
    ]);
  start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    halt: () => void run('pg_ctl', ['-D', data, '-w', '-m', 'fast', 'stop']),
    restart: () => void start(),
    stop() {
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
