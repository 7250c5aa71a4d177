/**
 * A real SMTP peer for the mailer tests: `smtp-server` on port 0, every accepted message parsed with
 * `mailparser`, and a switch for how it answers the next message (accept, reply with a code, or drop
 * the connection in the middle of DATA).
 */
import type { Socket } from 'node:net';

import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';

/** One message the peer accepted. */
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

/** A running peer. */
export interface SmtpPeer {
  port: number;
  received: ReceivedMail[];
  /** Raw messages the peer answered with a scripted reply code (refused after DATA), in order. */
  rejected: Buffer[];
  /** Answers for the next messages, used in order; then `accept`. */
  script: DataBehaviour[];
  /** Recipients refused at RCPT TO with this reply (address -> [code, text]). */
  refuse: Map<string, [number, string]>;
  /** DATA commands the peer has seen, whatever it answered. */
  dataCount: number;
  close(): Promise<void>;
}

function smtpError(code: number, text: string): Error {
  return Object.assign(new Error(text), { responseCode: code });
}

/** Starts a peer on 127.0.0.1 and a free port. */
export async function startSmtpPeer(options: Partial<SMTPServerOptions> = {}): Promise<SmtpPeer> {
  const sockets = new Set<Socket>();
  const peer: SmtpPeer = {
    port: 0,
    received: [],
    rejected: [],
    script: [],
    refuse: new Map(),
    dataCount: 0,
    close: async () => undefined,
  };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    ...options,
    onRcptTo(address, _session, callback) {
      const refusal = peer.refuse.get(address.address);
      callback(refusal ? smtpError(refusal[0], refusal[1]) : null);
    },
    onData(stream, session, callback) {
      peer.dataCount++;
      const behaviour = peer.script.shift() ?? { kind: 'accept' };
      if (behaviour.kind === 'drop') {
        // Cut every connection once the first bytes of the message arrive: a relay dying mid-DATA.
        stream.once('data', () => {
          for (const s of sockets) s.destroy();
        });
        stream.resume();
        return;
      }
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        if (behaviour.kind === 'reply') {
          peer.rejected.push(Buffer.concat(chunks));
          callback(smtpError(behaviour.code, behaviour.text));
          return;
        }
        const raw = Buffer.concat(chunks);
        simpleParser(raw)
          .then((parsed) => {
            peer.received.push({
              from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
              recipients: session.envelope.rcptTo.map((r) => r.address),
              raw,
              parsed,
            });
            callback(null, behaviour.reply ?? 'Ok: queued as 4F2A1C0B3D');
          })
          .catch((err: unknown) => callback(err as Error));
      });
    },
  });
  server.server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  peer.port = (server.server.address() as { port: number }).port;
  peer.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return peer;
}
