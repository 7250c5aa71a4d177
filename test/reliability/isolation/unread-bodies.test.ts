/**
 * Issue 22, "Nothing is read before it is authorised", against the real notification process
 * started with API tokens and `mailer.max_message_bytes` at 25 MiB (so SendEmail accepts about 35 MB):
 * 40 SendEmail requests of 30 MB without a token on the gRPC port and 40 on the HTTP port, all at
 * once. Every one is refused UNAUTHENTICATED, and the process's peak resident memory (VmHWM, reset
 * just before) grows by less than a few tens of MB: the bodies were never read. Before the fix the
 * process read every body whole before checking the token (gigabytes).
 */
import net from 'node:net';
import http2 from 'node:http2';
import { readFileSync, writeFileSync } from 'node:fs';
import { create, toBinary } from '@bufbuild/protobuf';

import { SendEmailRequestSchema } from '../../../shared/gen/svc/notification/v1/notification_pb';
import { rssBytes } from '../../support/process-probe';
import { startServiceProcess, type ServiceProcess } from '../../support/service-process';
import { atMost, exactly, recordFigures } from '../results';

const MIB = 1024 * 1024;
const TOKEN = 'unread-bodies-token-5d1c';
const CALLS_PER_PORT = 40;
/** What "less than a few tens of MB" means here: far below one body, let alone 80 of them. */
const GROWTH_LIMIT = 48 * MIB;
const PATH = '/svc.notification.v1.NotificationService/SendEmail';

let proc: ServiceProcess;
/** One SendEmail of about 30 MB (a 30 MB attachment), encoded once and sent by every call. */
let body: Buffer;

beforeAll(async () => {
  proc = await startServiceProcess('notification', {
    SVC_NOTIFICATION__SERVER__API_TOKENS: TOKEN,
    SVC_NOTIFICATION__MAILER__MAX_MESSAGE_BYTES: String(25 * MIB),
    SVC_NOTIFICATION__INBOX__STORE_BACKEND: 'memory',
    SVC_NOTIFICATION__DELIVERY__STORE_BACKEND: 'memory',
  });
  body = Buffer.from(
    toBinary(
      SendEmailRequestSchema,
      create(SendEmailRequestSchema, {
        to: ['someone@example.com'],
        subject: 'large',
        text: 'x',
        attachments: [
          { filename: 'a.bin', contentType: 'application/octet-stream', content: new Uint8Array(30 * MIB) },
        ],
      }),
    ),
  );
}, 120_000);

afterAll(async () => {
  await proc?.stop();
});

/** Peak resident memory of `pid` since the last reset (VmHWM), bytes. */
function peakRss(pid: number): number {
  const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmHWM for pid ${pid}`);
  return Number(m[1]) * 1024;
}

/** Resets the peak (VmHWM) of `pid` to its current resident memory. */
function resetPeakRss(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

/** A gRPC SendEmail of `body` over a connection of its own, without a token: its grpc-status. */
function grpcCall(port: number): Promise<string> {
  return new Promise((resolve) => {
    // The client queues the whole body at once: its session may hold that much (Node's default
    // of 10 MB would make the client reset its own stream).
    const session = http2.connect(`http://127.0.0.1:${port}`, { maxSessionMemory: 256 });
    const done = (status: string): void => {
      session.destroy();
      resolve(status);
    };
    session.on('error', (err) => done(`session error ${err.message}`));
    const stream = session.request({
      ':method': 'POST',
      ':path': PATH,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    let status: string | undefined;
    const read = (headers: http2.IncomingHttpHeaders): void => {
      const s = headers['grpc-status'];
      if (typeof s === 'string') status = s;
    };
    stream.on('response', read);
    stream.on('trailers', read);
    stream.on('data', () => undefined);
    stream.on('close', () => done(status ?? `no grpc-status (rst ${stream.rstCode})`));
    stream.on('error', () => undefined);
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(body.length, 1);
    stream.write(prefix);
    stream.end(body);
  });
}

/**
 * A Connect (binary) SendEmail of `body` without a token, over a plain TCP connection of its own
 * that writes the body as fast as the server takes it: the HTTP status and the error code of the
 * answer, once it is complete. (A raw client: Node's own HTTP client, run in the same process as
 * 40 HTTP/2 sessions, sometimes reports EPIPE for an answer the server did send.)
 */
function connectCall(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let answer = '';
    let settled = false;
    const settle = (what: string): void => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve(what);
    };
    socket.on('connect', () => {
      socket.write(
        `POST ${PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/proto\r\n` +
          `Content-Length: ${body.length}\r\n\r\n`,
      );
      let at = 0;
      const pump = (): void => {
        while (at < body.length && !settled) {
          const end = Math.min(body.length, at + 1024 * 1024);
          const more = socket.write(body.subarray(at, end));
          at = end;
          if (!more) return void socket.once('drain', pump);
        }
      };
      pump();
    });
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString('utf8');
      const status = /^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1];
      const code = /"code":"(\w+)"/.exec(answer)?.[1];
      if (status !== undefined && code !== undefined && /\}/.test(answer)) settle(`${status} ${code}`);
    });
    socket.on('error', (err) => settle(`error ${err.message} after ${JSON.stringify(answer.slice(0, 40))}`));
    socket.on('close', () => settle(`closed after ${JSON.stringify(answer.slice(0, 40))}`));
  });
}

test('40 unauthenticated 30 MB requests on each port at once are refused and never read into memory', async () => {
  const pid = proc.child.pid!;
  const before = rssBytes(pid);
  resetPeakRss(pid);

  const [grpcAnswers, connectAnswers] = await Promise.all([
    Promise.all(Array.from({ length: CALLS_PER_PORT }, () => grpcCall(proc.grpcPort))),
    Promise.all(Array.from({ length: CALLS_PER_PORT }, () => connectCall(proc.httpPort))),
  ]);
  const growth = peakRss(pid) - before;

  const refusedGrpc = grpcAnswers.filter((s) => s === '16').length;
  const refusedConnect = connectAnswers.filter((s) => s === '401 unauthenticated').length;
  recordFigures({
    section: 'isolation-unread-bodies',
    title: 'Isolation: large requests without a token are refused before they are read',
    kind: 'isolation',
    figures: [
      exactly('gRPC calls refused UNAUTHENTICATED (of 40 x 30 MB)', refusedGrpc, CALLS_PER_PORT),
      exactly('Connect calls refused 401 (of 40 x 30 MB)', refusedConnect, CALLS_PER_PORT),
      atMost('peak resident memory growth, MiB', Math.round(growth / MIB), GROWTH_LIMIT / MIB),
    ],
  });
  expect(grpcAnswers).toEqual(Array(CALLS_PER_PORT).fill('16'));
  expect(connectAnswers).toEqual(Array(CALLS_PER_PORT).fill('401 unauthenticated'));
  expect(growth).toBeLessThan(GROWTH_LIMIT);
  // The process is still serving.
  expect(proc.child.exitCode).toBeNull();
}, 180_000);
