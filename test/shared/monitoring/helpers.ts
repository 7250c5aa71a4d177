/**
 * Test helpers for the monitoring library: a hand-driven clock and timers, real HTTP servers on port
 * 0, a log capture and promtool.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger, type Logger } from '../../../shared/logging/logger';
import type { Clock, TimerHandle, Timers } from '../../../shared/runtime/clock';

/** A clock that only moves when told. */
export class FakeClock implements Clock {
  constructor(
    public mono = 1000,
    public wall = Date.UTC(2026, 0, 1),
  ) {}
  monotonic(): number {
    return this.mono;
  }
  now(): number {
    return this.wall;
  }
  advance(ms: number): void {
    this.mono += ms;
    this.wall += ms;
  }
}

interface FakeTimer {
  id: number;
  due: number;
  fn: () => void;
  every?: number;
}

/** Timers fired by `advance`, sharing time with an optional FakeClock. */
export class FakeTimers implements Timers {
  private now = 0;
  private nextId = 1;
  private timers = new Map<number, FakeTimer>();

  constructor(private readonly clock?: FakeClock) {}

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.nextId++;
    this.timers.set(id, { id, due: this.now + ms, fn });
    return id;
  }
  clearTimeout(handle: TimerHandle): void {
    this.timers.delete(handle as number);
  }
  setInterval(fn: () => void, ms: number): TimerHandle {
    const id = this.nextId++;
    this.timers.set(id, { id, due: this.now + ms, fn, every: ms });
    return id;
  }
  clearInterval(handle: TimerHandle): void {
    this.timers.delete(handle as number);
  }
  /** Number of pending timers. */
  get pending(): number {
    return this.timers.size;
  }
  /** Moves time forward, firing due timers in order. */
  advance(ms: number): void {
    const target = this.now + ms;
    for (;;) {
      const due = [...this.timers.values()].filter((t) => t.due <= target).sort((a, b) => a.due - b.due)[0];
      if (!due) break;
      if (this.clock) this.clock.advance(due.due - this.now);
      this.now = due.due;
      if (due.every) due.due += due.every;
      else this.timers.delete(due.id);
      due.fn();
    }
    if (this.clock) this.clock.advance(target - this.now);
    this.now = target;
  }
}

/** Resolves after pending promise callbacks have run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
}

/** A logger whose lines are kept as parsed objects. */
export function captureLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({
    name: 'test',
    level: 'debug',
    destination: { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) },
  });
  return { logger, lines };
}

/** A started HTTP server on port 0. */
export interface TestServer {
  server: Server;
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Starts an HTTP server on 127.0.0.1, port 0. */
export async function listen(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<TestServer> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    port,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Runs `promtool check metrics` on text; returns its exit status and output. Throws when promtool is missing. */
/**
 * {@link promtool} without blocking the event loop: a test that talks HTTP to an in-process server
 * afterwards must not stall both for seconds (a pooled keep-alive socket then races the server
 * closing it: ECONNRESET).
 */
export function promtoolAsync(text: string): Promise<{ status: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.on('error', (err) =>
      reject(new Error(`promtool is required (Debian package prometheus): ${err.message}`)),
    );
    child.on('close', (status) => resolve({ status, output }));
    child.stdin.end(text);
  });
}

export function promtool(text: string): { status: number | null; output: string } {
  const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  if (r.error) throw new Error(`promtool is required (Debian package prometheus): ${r.error.message}`);
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}
