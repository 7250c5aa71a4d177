/**
 * `buf curl` (node_modules/.bin/buf), a client written elsewhere, on the three protocols the services
 * speak: gRPC on the gRPC port with server reflection as its only schema, Connect and gRPC-Web on
 * the HTTP port with the schema compiled from proto/ (`--schema proto`: the HTTP port serves no
 * reflection). An answer is the JSON buf curl prints: the response on stdout, or on a failed call
 * `{"code","message"}` on stderr (and an exit status of code × 8).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

import type { Target } from './processes';

const ROOT = join(__dirname, '..', '..', '..');

/**
 * The buf binary itself. node_modules/.bin/buf is a node wrapper that spawns it: a node start per call
 * doubles the cost of each call on a loaded machine, and a signal to the wrapper does not reach the
 * binary. Resolved the way the wrapper resolves it; the wrapper when the platform is not listed.
 */
function bufBinary(): string {
  const packages: Record<string, string> = {
    'linux x64': '@bufbuild/buf-linux-x64',
    'linux arm64': '@bufbuild/buf-linux-aarch64',
    'darwin x64': '@bufbuild/buf-darwin-x64',
    'darwin arm64': '@bufbuild/buf-darwin-arm64',
  };
  const pkg = packages[`${process.platform} ${process.arch}`];
  try {
    if (pkg) return require.resolve(`${pkg}/bin/buf`);
  } catch {
    // not installed: fall through to the wrapper
  }
  return join(ROOT, 'node_modules', '.bin', 'buf');
}

const BUF = bufBinary();
/** A deadline against a hung client: a unary call here answers in well under a second. */
const CALL_TIMEOUT_MS = 30_000;

/** The protocols buf curl speaks, as its `--protocol` names them. */
export const PROTOCOLS = ['grpc', 'connect', 'grpcweb'] as const;
export type Protocol = (typeof PROTOCOLS)[number];

/** One answer: `ok` with the response, or the error code and message buf curl reports. */
export type BufAnswer =
  { readonly code: 'ok'; readonly response: unknown } | { readonly code: string; readonly message: string };

/** The arguments that point buf curl at `path` (`pkg.Service/Method`) of `t` over `protocol`. */
export function bufArgs(
  t: Target,
  protocol: Protocol,
  path: string,
  headers: readonly string[],
  reflectHeaders: readonly string[] = headers,
): string[] {
  // Over gRPC the schema comes from server reflection, which needs the token too when tokens are on:
  // buf curl sends `-H` headers with the call only, `--reflect-header` ones with reflection.
  const where =
    protocol === 'grpc'
      ? [
          ...reflectHeaders.flatMap((h) => ['--reflect-header', h]),
          '--http2-prior-knowledge',
          `http://${t.grpcAddress}/${path}`,
        ]
      : ['--schema', 'proto', `${t.baseUrl}/${path}`];
  return ['curl', '--protocol', protocol, ...headers.flatMap((h) => ['-H', h]), ...where];
}

function parse(text: string, what: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new Error(`buf curl printed no JSON for ${what}: ${JSON.stringify(text.slice(0, 400))}`);
  }
}

/**
 * A unary call; rejects only when buf curl itself fails (no JSON answer, a hang). `reflectHeaders`
 * (the call's `headers` by default) go with the reflection requests of the gRPC protocol.
 */
export function bufUnary(
  t: Target,
  protocol: Protocol,
  path: string,
  request: unknown,
  headers: readonly string[],
  reflectHeaders: readonly string[] = headers,
): Promise<BufAnswer> {
  const args = [...bufArgs(t, protocol, path, headers, reflectHeaders), '--data', JSON.stringify(request)];
  // The schema argument `proto` is resolved against the checkout (its buf.yaml).
  return new Promise((resolve, reject) => {
    execFile(BUF, args, { cwd: ROOT, timeout: CALL_TIMEOUT_MS }, (err, stdout, stderr) => {
      const what = `${protocol} ${path}`;
      try {
        if (!err) return resolve({ code: 'ok', response: parse(stdout, what) });
        if (err.killed) return reject(new Error(`buf curl hung on ${what}`));
        const body = parse(stderr, what) as { code?: unknown; message?: unknown };
        if (typeof body.code !== 'string') throw new Error(`no code for ${what}: ${stderr}`);
        resolve({ code: body.code, message: typeof body.message === 'string' ? body.message : '' });
      } catch (e) {
        reject(e as Error);
      }
    });
  });
}

/** An open server stream: the messages printed so far, and a way to end it. */
export interface BufStream {
  readonly child: ChildProcess;
  /** stdout so far (buf curl pretty-prints each message as JSON). */
  output(): string;
  /** Ends the call from the client side (SIGTERM: buf curl cancels it) and resolves on exit. */
  close(): Promise<void>;
}

/** Opens a server-streaming call with buf curl. */
export function bufStream(
  t: Target,
  protocol: Protocol,
  path: string,
  request: unknown,
  headers: readonly string[],
): BufStream {
  const args = [...bufArgs(t, protocol, path, headers), '--data', JSON.stringify(request)];
  // Its own process group: node_modules/.bin/buf is a node wrapper around the binary, and a signal
  // must reach the binary for the call to end.
  const child = spawn(BUF, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  createInterface({ input: child.stderr! }).on('line', () => undefined);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    output: () => out,
    close: async () => {
      const signal = (s: NodeJS.Signals) => {
        if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, s);
      };
      signal('SIGTERM');
      const timer = setTimeout(() => signal('SIGKILL'), CALL_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    },
  };
}
