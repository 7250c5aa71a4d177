/**
 * The README's "Preferences" examples, run as printed against the real notification process: the
 * ```sh prefs:<step> blocks, in order, with bash. Changed, and only that: the ports become free ones
 * (in the commands, and for the service by its SVC_ variables), `npm run start:notification` runs dist/ without rebuilding it (the suite runs on a build), and
 * PGlite lives in a temp dir. The unsubscribe block runs in the shell the start block's exports
 * left, as a reader's terminal would.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { reservePort } from '../support/ports';
import { waitFor } from '../support/wait';

const ROOT = join(__dirname, '..', '..');
const STEP_TIMEOUT_MS = 60_000;
const MAX_OUTPUT_CHARS = 256 * 1024;

function blocks(markdown: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of markdown.matchAll(/^```sh prefs:([a-z-]+)\n([\s\S]*?)^```$/gm)) out.set(m[1]!, m[2]!);
  return out;
}

describe("the README's Preferences examples, run as printed", () => {
  const scripts = blocks(readFileSync(join(ROOT, 'README.md'), 'utf8'));
  let dir: string;
  let http: number;
  let grpc: number;
  let env: NodeJS.ProcessEnv;
  let service: ChildProcess | undefined;
  let serviceOutput = '';
  let token = '';

  const localize = (text: string): string =>
    text
      .replace(/\b8080\b/g, String(http))
      .replace(/\b50051\b/g, String(grpc))
      .replace(/\bnpm run start:notification\b/g, 'node dist/services/notification/main.js');

  function run(script: string): Promise<{ code: number | null; output: string }> {
    return new Promise((resolve, reject) => {
      let output = '';
      const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', script], {
        cwd: ROOT,
        env: { ...env, TOKEN: token },
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const timer = setTimeout(() => {
        process.kill(-child.pid!, 'SIGKILL');
        reject(new Error(`did not finish:\n${output}`));
      }, STEP_TIMEOUT_MS);
      const take = (c: Buffer): void => {
        if (output.length < MAX_OUTPUT_CHARS) output += c.toString('utf8');
      };
      child.stdout.on('data', take);
      child.stderr.on('data', take);
      child.once('close', (code) => {
        clearTimeout(timer);
        resolve({ code, output });
      });
    });
  }

  beforeAll(async () => {
    expect([...scripts.keys()]).toEqual(['start', 'admin', 'unsubscribe']);
    if (!existsSync(join(ROOT, 'dist', 'services', 'notification', 'main.js'))) {
      execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
    }
    dir = mkdtempSync(join(tmpdir(), 'prefs-readme-'));
    http = await reservePort();
    grpc = await reservePort();
    // A reader's shell: no SVC_* left over from this test run, no jest NODE_OPTIONS.
    env = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith('SVC_') && k !== 'NODE_OPTIONS'),
    );
    env.SVC_NOTIFICATION__DATABASE__DATA_DIR = join(dir, 'data');
    env.NODE_ENV = 'development';
    service = spawn('bash', ['-c', localize(scripts.get('start')!)], {
      cwd: ROOT,
      // The printed start uses the default ports; the test's free ones replace them.
      env: {
        ...env,
        SVC_NOTIFICATION__SERVER__HTTP_PORT: String(http),
        SVC_NOTIFICATION__SERVER__GRPC_PORT: String(grpc),
      },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const take = (c: Buffer): void => {
      if (serviceOutput.length < MAX_OUTPUT_CHARS) serviceOutput += c.toString('utf8');
    };
    service.stdout!.on('data', take);
    service.stderr!.on('data', take);
    await waitFor(
      () => serviceOutput.includes('notification ready'),
      'the notification service to start',
      120_000,
    );
    token = /#token=([A-Za-z0-9._-]+)/.exec(serviceOutput)![1]!;
  }, 180_000);

  afterAll(async () => {
    if (service?.pid && service.exitCode === null) {
      const exited = new Promise((resolve) => service!.once('exit', resolve));
      process.kill(-service.pid, 'SIGINT');
      await exited;
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('the admin block reads the preferences, turns news SMS on, and is refused turning security off', async () => {
    const { code, output } = await run(localize(scripts.get('admin')!));
    expect(code).toBe(0);
    expect(output).toContain(
      '{"name":"news","description":"Product news","required":false,"channels":[{"channel":"email","enabled":true,"chosen":false},{"channel":"sms","enabled":false,"chosen":false}]}',
    );
    expect(output).toContain('{"channel":"sms","enabled":true,"chosen":true}');
    expect(output).toContain(
      '{"error":{"code":"invalid_argument","message":"preferences[0]: category \\"security\\" is required and cannot be turned off"}}',
    );
  });

  it('the unsubscribe block shows the confirm form on GET and unsubscribes on POST', async () => {
    const exports = localize(scripts.get('start')!)
      .split('\n')
      .filter((line) => !line.startsWith('node '))
      .join('\n');
    const { code, output } = await run(`${exports}\n${localize(scripts.get('unsubscribe')!)}`);
    expect(code).toBe(0);
    expect(output).toMatch(/^<form method="post" action="\?token=[A-Za-z0-9_.-]+">$/m);
    expect(output).toContain('<p>You will no longer receive “news” emails.</p>');
    const after = await fetch(`http://127.0.0.1:${http}/admin/notifications/preferences`, {
      headers: { Authorization: `Bearer ${token}` },
    });
    expect(JSON.stringify(await after.json())).toContain('{"channel":"email","enabled":false,"chosen":true}');
  });
});
