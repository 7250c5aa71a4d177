/**
 * The README's "Tour", run as printed. Every ```sh tour:<step> block of README.md is run with bash
 * in the checkout, in order, as real processes: `npm run peers`, the services started by the tour's
 * command (`SVC_CONFIG_FILE=config/tour.yaml npm start`), a `buf curl` stream, the sends, curl on
 * /metrics and /status.json. Each step's output is checked for what the README says it shows.
 *
 * What is changed, and only that: the tour's ports become free ones (in the commands and in a copy of
 * config/tour.yaml), so the test never collides with a tour or another test running on this machine;
 * `npm start` runs package.json's start script without its `npm run build` (the suite runs on a
 * build already, and rebuilding dist/ here would rewrite files other tests are loading); the
 * notification's PGlite lives in a temp dir instead of ./data.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { waitFor } from '../support/wait';
import { reservePort } from '../support/ports';

const ROOT = join(__dirname, '..', '..');
// Generous: the first PGlite start on a loaded 2-core machine takes 20 s or more. Deadlines against
// hangs, never timing assertions.
const START_TIMEOUT_MS = 120_000;
const STEP_TIMEOUT_MS = 60_000;
/** Output kept per process: the tour prints a few kilobytes; the rest is cut and marked. */
const MAX_OUTPUT_CHARS = 1024 * 1024;

/** The steps the tour has, in order; a README change that adds or drops one must change this test. */
const STEPS = ['peers', 'start', 'watch', 'send', 'deliveries', 'metrics', 'alert', 'status'] as const;
type Step = (typeof STEPS)[number];

/** The fenced ```sh tour:<step> blocks of the README, in order. */
function tourBlocks(markdown: string): { step: string; script: string }[] {
  const blocks: { step: string; script: string }[] = [];
  const fence = /^```sh tour:([a-z-]+)\n([\s\S]*?)^```$/gm;
  for (const m of markdown.matchAll(fence)) blocks.push({ step: m[1]!, script: m[2]! });
  return blocks;
}

/** Whether a TCP connection to localhost:`port` is refused (nothing listens any more). */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, 'localhost');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

/** Output of a process, bounded. */
class Output {
  text = '';
  cut = false;
  append(chunk: Buffer): void {
    if (this.text.length >= MAX_OUTPUT_CHARS) {
      this.cut = true;
      return;
    }
    this.text += chunk.toString('utf8');
  }
}

/** A process of the tour left running (a terminal of its own), in its own process group. */
interface Running {
  step: Step;
  child: ChildProcess;
  output: Output;
  exited: Promise<number | null>;
}

describe('the README tour, run as printed', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const blocks = tourBlocks(readme);
  const script = (step: Step): string => blocks.find((b) => b.step === step)!.script;
  const running: Running[] = [];
  const ports = new Map<string, number>();
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let startScript: string;
  let adminToken = '';

  /** The printed commands with the tour's ports swapped for free ones and the tour file for its copy. */
  function localize(text: string): string {
    let out = text.replace(/\b(50051|8080|50052|8081|1025|4010)\b/g, (p) => String(ports.get(p)));
    out = out.replaceAll('config/tour.yaml', join(dir, 'tour.yaml'));
    return out;
  }

  function commands(step: Step): string {
    // `npm start` is package.json's start script minus the build (see the file comment).
    return localize(script(step)).replace(/\bnpm start\b/g, startScript);
  }

  function background(step: Step): Running {
    const output = new Output();
    const child = spawn('bash', ['-c', commands(step)], {
      cwd: ROOT,
      env,
      detached: true, // its own process group: a Ctrl-C reaches every process the command started
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (c: Buffer) => output.append(c));
    child.stderr!.on('data', (c: Buffer) => output.append(c));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const proc = { step, child, output, exited };
    running.push(proc);
    return proc;
  }

  /** Runs a step's block to its end, like pasting it into a terminal (bash, stop at the first failure). */
  function run(step: Step): Promise<{ code: number | null; output: string }> {
    return new Promise((resolve, reject) => {
      const output = new Output();
      const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', commands(step)], {
        cwd: ROOT,
        env,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const timer = setTimeout(() => {
        process.kill(-child.pid!, 'SIGKILL');
        reject(new Error(`tour step ${step} did not finish:\n${output.text}`));
      }, STEP_TIMEOUT_MS);
      child.stdout.on('data', (c: Buffer) => output.append(c));
      child.stderr.on('data', (c: Buffer) => output.append(c));
      // 'close' (stdout and stderr read to their end), not 'exit', which can come first.
      child.once('close', (code) => {
        clearTimeout(timer);
        resolve({ code, output: output.text });
      });
    });
  }

  /** Re-runs a step until its output satisfies `ok`, as a reader would after "a moment later". */
  async function runUntil(step: Step, ok: (output: string) => boolean, what: string): Promise<string> {
    const deadline = Date.now() + STEP_TIMEOUT_MS;
    for (;;) {
      const result = await run(step);
      if (result.code === 0 && ok(result.output)) return result.output;
      if (Date.now() > deadline)
        throw new Error(`tour step ${step}: timed out waiting for ${what}; last output:\n${result.output}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  const peers = (): string => running.find((r) => r.step === 'peers')!.output.text;
  const services = (): string => running.find((r) => r.step === 'start')!.output.text;
  const watch = (): string => running.find((r) => r.step === 'watch')!.output.text;

  beforeAll(async () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    // `npm start` builds when a source changed, then starts both services: the tour runs the start
    // part (the build is ensured below, once).
    const build = 'npm run build:if-stale && ';
    expect(pkg.scripts.start!.startsWith(build)).toBe(true);
    startScript = pkg.scripts.start!.slice(build.length);
    expect(pkg.scripts.peers).toBe('node scripts/peers.mjs');
    if (!existsSync(join(ROOT, 'dist', 'services', 'notification', 'main.js'))) {
      execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
    }

    dir = mkdtempSync(join(tmpdir(), 'tour-'));
    for (const p of ['50051', '8080', '50052', '8081', '1025', '4010']) ports.set(p, await reservePort());
    writeFileSync(join(dir, 'tour.yaml'), localize(readFileSync(join(ROOT, 'config', 'tour.yaml'), 'utf8')));

    // A reader's shell: no SVC_* left over from this test run, no jest NODE_OPTIONS.
    env = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith('SVC_') && k !== 'NODE_OPTIONS'),
    );
    env.PEERS_SMTP_PORT = String(ports.get('1025'));
    env.PEERS_SMS_PORT = String(ports.get('4010'));
    env.SVC_NOTIFICATION__DATABASE__DATA_DIR = join(dir, 'data', 'notification');
    env.SVC_MONITOR__DATABASE__DATA_DIR = join(dir, 'data', 'monitor');
    env.NODE_ENV = 'development';
  });

  afterAll(async () => {
    // Ctrl-C in every terminal, last started first; SIGKILL for anything still there after 20 s.
    for (const proc of running.reverse()) {
      if (proc.child.exitCode !== null || proc.child.signalCode !== null) continue;
      try {
        process.kill(-proc.child.pid!, 'SIGINT');
      } catch {
        continue;
      }
      const killed = setTimeout(() => {
        try {
          process.kill(-proc.child.pid!, 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }, 20_000);
      await proc.exited;
      clearTimeout(killed);
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('has every step, each in one ```sh tour:<step> block', () => {
    expect(blocks.map((b) => b.step)).toEqual([...STEPS]);
    // The quick start stays as it was, and the tour names the file it runs with.
    expect(readme).toContain('npm ci && npm start');
    expect(script('start').trim()).toBe('SVC_CONFIG_FILE=config/tour.yaml npm start');
    expect(script('peers').trim()).toBe('npm run peers');
  });

  it(
    'starts the stand-ins and both services as the tour does',
    async () => {
      background('peers');
      await waitFor(() => peers().includes('peers ready'), 'the peers', START_TIMEOUT_MS);
      expect(peers()).toContain(
        `peers ready: SMTP on localhost:${ports.get('1025')}, SMS API on http://localhost:${ports.get('4010')}`,
      );

      background('start');
      await waitFor(
        () => services().includes('notification ready') && services().includes('monitor ready'),
        'both services ready',
        START_TIMEOUT_MS,
      );
      // The admin page link the tour tells the reader to open, signed for the demo user.
      const link = new RegExp(
        `http://localhost:${ports.get('8080')}/admin/notifications#token=([A-Za-z0-9_.-]+)`,
      ).exec(services());
      expect(link).not.toBeNull();
      adminToken = link![1]!;
      // Two waits of up to START_TIMEOUT_MS each: the test's own limit must outlast both, or a slow start
      // ends in jest's bare timeout instead of the wait's message.
    },
    2 * START_TIMEOUT_MS + 30_000,
  );

  it('streams the inbox, sends a message, an email and an SMS, and each arrives', async () => {
    const watcher = background('watch');
    await waitFor(() => watch().includes('INBOX_EVENT_TYPE_LIVE'), 'the live watch', STEP_TIMEOUT_MS);

    const sent = await run('send');
    expect(sent.code).toBe(0);
    expect(sent.output).toContain('"title": "Welcome to the tour"');
    expect(sent.output.match(/"status": "DELIVERY_STATUS_PENDING"/g)).toHaveLength(2);

    // The stream printed the message.
    await waitFor(() => watch().includes('INBOX_EVENT_TYPE_SENT'), 'the SENT event', STEP_TIMEOUT_MS);
    expect(watch()).toContain('"title": "Welcome to the tour"');
    expect(watch()).toContain('"unreadCount": 1');
    expect(watcher.child.exitCode).toBeNull();

    // The SMTP peer got the email and the SMS stand-in the SMS, as the README shows them.
    await waitFor(
      () => peers().includes('to jane@example.com') && peers().includes('[sms]'),
      'the email and the SMS at the stand-ins',
      STEP_TIMEOUT_MS,
    );
    expect(peers()).toMatch(
      /\[smtp\] email from noreply@example\.com to jane@example\.com: "Hello from the tour" \(\d+ bytes\)\n {4}Hi Jane, this went through the local SMTP peer\./,
    );
    expect(peers()).toMatch(
      /\[sms\] SMS from \+15550001111 to \+15551234567: "Your tour code is 123456" \(sid SM[0-9a-f]{32}\)/,
    );

    // The admin page (signed in through the printed link) lists the message.
    const res = await fetch(`http://localhost:${ports.get('8080')}/admin/notifications/inbox`, {
      headers: { authorization: `Bearer ${adminToken}` },
    });
    expect(res.status).toBe(200);
    const inbox = (await res.json()) as { unread_count: number; notifications: { title: string }[] };
    expect(inbox.notifications.map((n) => n.title)).toContain('Welcome to the tour');
    expect(inbox.unread_count).toBe(1);
  });

  it('lists both deliveries as SENT', async () => {
    const out = await runUntil(
      'deliveries',
      (o) =>
        /"channel": "CHANNEL_EMAIL"[\s\S]*?"status": "DELIVERY_STATUS_SENT"/.test(o) &&
        /"channel": "CHANNEL_SMS"[\s\S]*?"status": "DELIVERY_STATUS_SENT"/.test(o),
      'an email and an SMS delivery SENT',
    );
    expect(out).toContain('"recipient": "j***@example.com"');
  });

  it('reads the delivery counters and the target on /metrics', async () => {
    const out = await runUntil('metrics', (o) => /^up\{target="notification"\} 1$/m.test(o), 'up 1');
    expect(out).toMatch(
      /^notification_deliveries_total\{channel="email",backend="tour-smtp",outcome="sent"\} [1-9]\d*$/m,
    );
    expect(out).toMatch(
      /^notification_deliveries_total\{channel="sms",backend="tour-sms",outcome="sent"\} 1$/m,
    );
  });

  it('raises an alert that reaches the status page and comes back as an email', async () => {
    const page = await fetch(`http://localhost:${ports.get('8081')}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');

    const raised = await run('alert');
    expect(raised.code).toBe(0);
    const id = /"alertId": "([0-9a-f-]{36})"/.exec(raised.output)?.[1];
    expect(id).toBeDefined();

    // The peer prints the envelope line and the body in separate writes: wait for the body too.
    await waitFor(
      () =>
        peers().includes('to ops@example.com: "[HIGH] Disk almost full"') &&
        peers().includes(`Alert id: ${id}`),
      'the alert email, with its alert id, at the SMTP peer',
      STEP_TIMEOUT_MS,
    );

    const out = await runUntil(
      'status',
      (o) => (JSON.parse(o) as { targets: { state: string }[] }).targets[0]?.state === 'up',
      'the notification target up on /status.json',
    );
    const status = JSON.parse(out) as {
      targets: { name: string; state: string }[];
      alerts: { id: string; title: string; severity: string; source_service: string }[];
    };
    expect(status.targets.map((t) => [t.name, t.state])).toEqual([['notification', 'up']]);
    expect(status.alerts).toContainEqual(
      expect.objectContaining({ id, title: 'Disk almost full', severity: 'high', source_service: 'tour' }),
    );
  });

  it('stops every terminal with Ctrl-C, and nothing is left listening', async () => {
    for (const proc of [...running].reverse()) {
      process.kill(-proc.child.pid!, 'SIGINT');
      const code = await proc.exited;
      // The services shut down gracefully and concurrently exits 0; npm and buf curl die of the
      // signal itself (no exit code), as they do in a terminal.
      if (proc.step === 'start') expect(code).toBe(0);
      expect(proc.output.cut).toBe(false);
    }
    expect(services()).toMatch(/^\[notification\] .*"msg":"stopped"/m);
    expect(services()).toMatch(/^\[monitor\] .*"msg":"stopped"/m);
    for (const port of ports.values()) await expect(refused(port)).resolves.toBe(true);
  });
});
