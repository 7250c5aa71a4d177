/**
 * A real SMTP peer for the mailer tests, the e2e crash and replica tests and the email benchmark:
 * `smtp-server` on 127.0.0.1, every accepted message counted by its Message-ID and (unless told
 * otherwise) parsed with `mailparser`, and switches for how it answers: a script for the next
 * messages (accept, reply with a code, drop the message's connection in the middle of DATA), `pause()` to hold
 * every answer to DATA, `delayMs` to answer it late, and `stop()` / `start()` on the same port, so a service configured with the
 * port meets a relay that is down (connection refused) and later up again.
 */
import type { Socket } from 'node:net';

import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';

/** One message the peer accepted (kept only when the peer parses). */
export interface ReceivedMail {
  /** MAIL FROM. */
  from: string;
  /** RCPT TO, in order. */
  recipients: string[];
  raw: Buffer;
  parsed: ParsedMail;
}

/** How the peer answers DATA. */
export type DataBehaviour =
  { kind: 'accept'; reply?: string } | { kind: 'reply'; code: number; text: string } | { kind: 'drop' };

/** What the peer is built with. */
export interface SmtpPeerOptions {
  /** Port to listen on; 0 (the default) picks a free one at the first `start()` and keeps it. */
  port?: number;
  /**
   * Parse every accepted message with mailparser and keep it in `received` (default true). The
   * benchmark turns it off: counting by Message-ID reads only the header block, so the peer does not
   * eat the CPU that the senders it measures need.
   */
  parse?: boolean;
  /** Passed to smtp-server as they are. */
  server?: Partial<SMTPServerOptions>;
}

/** A peer; `startSmtpPeer` gives one that listens, `createSmtpPeer` one that is down until `start()`. */
export interface SmtpPeer {
  /** The port; fixed after the first `start()` (or given), the same across stop/start. */
  port: number;
  /** Accepted messages, in order of acceptance (only with `parse`). */
  received: ReceivedMail[];
  /** Accepted messages by Message-ID (angle brackets included): how many times each arrived. */
  messageIds: Map<string, number>;
  /** Accepted messages in all, duplicates included. */
  acceptedCount: number;
  /** Raw messages the peer answered with a scripted reply code (refused after DATA), in order. */
  rejected: Buffer[];
  /** Answers for the next messages, used in order; then `accept`. */
  script: DataBehaviour[];
  /** Recipients refused at RCPT TO with this reply (address -> [code, text]). */
  refuse: Map<string, [number, string]>;
  /** DATA commands the peer has seen, whatever it answered. */
  dataCount: number;
  /** Milliseconds every answer to DATA waits (a slow relay); 0 (the default) answers at once. */
  delayMs: number;
  /** Resolves once `acceptedCount` reaches `n` (at once if it has). */
  whenAccepted(n: number): Promise<void>;
  /** Listens (again) on `port`. */
  start(): Promise<void>;
  /** Drops every connection and stops listening: senders then meet connection refused. */
  stop(): Promise<void>;
  /** Holds the answer to every DATA (the messages are read, not acknowledged) until `resume()`. */
  pause(): void;
  /** Answers every held DATA and stops holding new ones. */
  resume(): void;
  /** `stop()`; the name the mailer tests use. */
  close(): Promise<void>;
}

function smtpError(code: number, text: string): Error {
  return Object.assign(new Error(text), { responseCode: code });
}

/** The Message-ID header of a raw message (angle brackets included), read from the header block only. */
export function messageIdOf(raw: Buffer): string | undefined {
  const end = raw.indexOf('\r\n\r\n');
  const head = raw.subarray(0, end < 0 ? Math.min(raw.length, 64 * 1024) : end).toString('latin1');
  // A folded header continues on a line that starts with white space.
  return /^message-id:[ \t]*(?:\r?\n[ \t]+)?(<[^>\r\n]*>)/im.exec(head)?.[1];
}

/** A peer that is down until `start()`. */
export function createSmtpPeer(options: SmtpPeerOptions = {}): SmtpPeer {
  const parse = options.parse ?? true;
  const sockets = new Set<Socket>();
  let server: SMTPServer | undefined;
  // Answers held while paused; `resume` (or `stop`) releases them.
  let held: (() => void)[] | undefined;

  // whenAccepted() callers, by the count they wait for.
  let waiters: { n: number; resolve: () => void }[] = [];
  const count = (raw: Buffer): void => {
    const id = messageIdOf(raw);
    if (id !== undefined) peer.messageIds.set(id, (peer.messageIds.get(id) ?? 0) + 1);
    peer.acceptedCount++;
    if (waiters.length > 0) {
      const ready = waiters.filter((w) => w.n <= peer.acceptedCount);
      waiters = waiters.filter((w) => w.n > peer.acceptedCount);
      for (const w of ready) w.resolve();
    }
  };

  const serverOptions = (): SMTPServerOptions => ({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    // A stopped peer must let go at once, not wait 30 s for its sessions.
    closeTimeout: 100,
    ...options.server,
    onRcptTo(address, _session, callback) {
      const refusal = peer.refuse.get(address.address);
      callback(refusal ? smtpError(refusal[0], refusal[1]) : null);
    },
    onData(stream, session, callback) {
      peer.dataCount++;
      const behaviour = peer.script.shift() ?? { kind: 'accept' };
      if (behaviour.kind === 'drop') {
        // Cut this message's connection once its first bytes arrive: a relay dying mid-DATA. Only this
        // one: cutting every connection could cut another message between the peer's acceptance and
        // the sender reading the 250, which SMTP cannot tell from a loss (the sender resends; a
        // duplicate no sender can prevent, not the fault this switch stands for).
        stream.once('data', () => {
          for (const s of sockets) if (s.remotePort === session.remotePort) s.destroy();
        });
        stream.resume();
        return;
      }
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const answer = (): void => {
          if (behaviour.kind === 'reply') {
            peer.rejected.push(Buffer.concat(chunks));
            callback(smtpError(behaviour.code, behaviour.text));
            return;
          }
          const raw = Buffer.concat(chunks);
          const from = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
          const recipients = session.envelope.rcptTo.map((r) => r.address);
          const reply = behaviour.reply ?? 'Ok: queued as 4F2A1C0B3D';
          if (!parse) {
            count(raw);
            callback(null, reply);
            return;
          }
          simpleParser(raw)
            .then((parsed) => {
              count(raw);
              peer.received.push({ from, recipients, raw, parsed });
              callback(null, reply);
            })
            .catch((err: unknown) => callback(err as Error));
        };
        if (held) held.push(answer);
        else if (peer.delayMs > 0) setTimeout(answer, peer.delayMs);
        else answer();
      });
    },
  });

  const peer: SmtpPeer = {
    port: options.port ?? 0,
    received: [],
    rejected: [],
    messageIds: new Map(),
    acceptedCount: 0,
    script: [],
    refuse: new Map(),
    dataCount: 0,
    delayMs: 0,
    whenAccepted(n) {
      if (peer.acceptedCount >= n) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ n, resolve }));
    },
    async start() {
      if (server) return;
      const s = new SMTPServer(serverOptions());
      // A sender killed mid-session resets its connection: smtp-server reports that as an 'error'
      // event, which would otherwise be thrown. Nothing to do: the message was not accepted.
      s.on('error', () => undefined);
      s.server.on('connection', (socket: Socket) => {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
      });
      await new Promise<void>((resolve, reject) => {
        s.server.once('error', reject);
        s.listen(peer.port, '127.0.0.1', () => {
          s.server.off('error', reject);
          resolve();
        });
      });
      server = s;
      peer.port = (s.server.address() as { port: number }).port;
    },
    async stop() {
      const s = server;
      server = undefined;
      if (!s) return;
      // Held answers belong to connections about to be destroyed: never answer them.
      if (held) held = [];
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    },
    pause() {
      held ??= [];
    },
    resume() {
      const answers = held ?? [];
      held = undefined;
      for (const answer of answers) answer();
    },
    close: () => peer.stop(),
  };
  return peer;
}

/** Starts a peer on 127.0.0.1 and a free port (smtp-server options as given). */
export async function startSmtpPeer(server: Partial<SMTPServerOptions> = {}): Promise<SmtpPeer> {
  const peer = createSmtpPeer({ server });
  await peer.start();
  return peer;
}

/** A free loopback port for a peer that must be down when the service starts (see ports.ts). */
export { reservePort } from './ports';
