/**
 * A throwaway pgbouncer in transaction mode in front of a test database (Debian package pgbouncer,
 * installed by `bash .ci/run`): each transaction runs on whichever server connection is free, as in
 * a deployment behind a transaction pooler.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { reservePort } from './ports';

const PGBOUNCER = '/usr/sbin/pgbouncer';

/** A running pgbouncer. */
export interface Pgbouncer {
  port: number;
  /** `databaseUrl` with its port changed to the pooler's. */
  pooledUrl: string;
  /** What pgbouncer wrote (for a failure's message). */
  log(): string;
  stop(): Promise<void>;
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Starts pgbouncer in transaction mode in front of `databaseUrl`'s server, `poolSize` server connections per database. */
export async function startPgbouncer(databaseUrl: string, poolSize = 4): Promise<Pgbouncer> {
  if (!existsSync(PGBOUNCER)) {
    throw new Error(`${PGBOUNCER} is missing: install Debian package pgbouncer (bash .ci/run does)`);
  }
  const direct = new URL(databaseUrl);
  const port = await reservePort();
  const dir = mkdtempSync(join(tmpdir(), 'pgbouncer-'));
  chmodSync(dir, 0o777);
  const ini = join(dir, 'pgbouncer.ini');
  const users = join(dir, 'users.txt');
  writeFileSync(users, `"${direct.username}" ""\n`);
  writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=${direct.hostname} port=${direct.port}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${users}`,
      `admin_users = ${direct.username}`,
      'pool_mode = transaction',
      `default_pool_size = ${poolSize}`,
      'max_client_conn = 200',
      'ignore_startup_parameters = extra_float_digits',
      '',
    ].join('\n'),
  );
  chmodSync(ini, 0o644);
  chmodSync(users, 0o644);
  const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  let output = '';
  const bouncer: ChildProcess = spawn(PGBOUNCER, [...(asRoot ? ['-u', 'postgres'] : []), ini], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  bouncer.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  bouncer.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const stop = async (): Promise<void> => {
    if (bouncer.exitCode === null) {
      const exited = new Promise((resolve) => bouncer.once('exit', resolve));
      bouncer.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 30_000;
  while (!(await portOpen(port))) {
    if (Date.now() > deadline || bouncer.exitCode !== null) {
      await stop();
      throw new Error(`pgbouncer did not listen: ${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const pooled = new URL(databaseUrl);
  pooled.port = String(port);
  return { port, pooledUrl: pooled.toString(), log: () => output, stop };
}
