#!/usr/bin/env node
// Local stand-ins for the README tour (`npm run peers`): an SMTP server that accepts every message
// and prints who it is from and to, its subject and text, and an HTTP server that answers like the
// Twilio Messages API (what the `sms_gateway` driver speaks) and prints every SMS it receives.
// Nothing is downloaded and nothing is delivered anywhere: this is for trying the services on one
// machine (config/tour.yaml points the notification service at these ports).
//
// Usage: npm run peers   (or node scripts/peers.mjs)
// Ports: PEERS_SMTP_PORT (default 1025) and PEERS_SMS_PORT (default 4010); Ctrl-C stops both.
import { Buffer } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { URLSearchParams } from 'node:url';

import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

const SMTP_PORT = port('PEERS_SMTP_PORT', 1025);
const SMS_PORT = port('PEERS_SMS_PORT', 4010);
/** Largest message the SMTP peer takes (the service's own default limit is 25 MiB of content). */
const MAX_MESSAGE_BYTES = 40 * 1024 * 1024;
/** Largest SMS API request body: a form with a 1,600-character body is far below it. */
const MAX_FORM_BYTES = 64 * 1024;
/** Characters of a text body printed; the rest is summarised, so one big email cannot flood the terminal. */
const MAX_PRINTED_CHARS = 2000;
/** Open connections per peer: a tour needs a handful. */
const MAX_CONNECTIONS = 100;

function port(variable, fallback) {
  const raw = process.env[variable];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > 65535) {
    console.error(`${variable} must be a port number (0-65535), got ${JSON.stringify(raw)}`);
    process.exit(2);
  }
  return value;
}

function clip(text) {
  const trimmed = (text ?? '').trim();
  return trimmed.length <= MAX_PRINTED_CHARS
    ? trimmed
    : `${trimmed.slice(0, MAX_PRINTED_CHARS)}… (${trimmed.length - MAX_PRINTED_CHARS} more characters)`;
}

function indent(text) {
  return text
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
}

const smtp = new SMTPServer({
  // Plain SMTP on localhost, no login: what the tour's smtp backend expects.
  authOptional: true,
  disabledCommands: ['STARTTLS', 'AUTH'],
  size: MAX_MESSAGE_BYTES,
  maxClients: MAX_CONNECTIONS,
  banner: 'tour peer',
  logger: false,
  onData(stream, session, callback) {
    const chunks = [];
    let bytes = 0;
    stream.on('data', (chunk) => {
      bytes += chunk.length;
      // Past the limit the rest is read and dropped; the answer below refuses the message.
      if (bytes <= MAX_MESSAGE_BYTES) chunks.push(chunk);
    });
    stream.on('error', (err) => callback(err));
    stream.on('end', () => {
      if (stream.sizeExceeded || bytes > MAX_MESSAGE_BYTES) {
        const err = Object.assign(new Error('message too large for the tour peer'), { responseCode: 552 });
        callback(err);
        return;
      }
      const to = session.envelope.rcptTo.map((r) => r.address).join(', ');
      const from = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
      simpleParser(Buffer.concat(chunks))
        .then((mail) => {
          console.log(`[smtp] email from ${from} to ${to}: "${mail.subject ?? ''}" (${bytes} bytes)`);
          const text = clip(mail.text);
          if (text) console.log(indent(text));
          callback();
        })
        .catch(() => {
          console.log(`[smtp] email from ${from} to ${to}: ${bytes} bytes that do not parse as MIME`);
          callback();
        });
    });
  },
});
smtp.on('error', (err) => console.error(`[smtp] ${err.message}`));

let nextSid = 1;
const MESSAGES = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/;
const ACCOUNT = /^\/2010-04-01\/Accounts\/([^/]+)\.json$/;

function answer(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

const sms = createServer((req, res) => {
  const path = (req.url ?? '').split('?')[0];
  const account = ACCOUNT.exec(path);
  if (req.method === 'GET' && account) {
    // The driver's health probe reads the account resource.
    answer(res, 200, { sid: account[1], status: 'active' });
    return;
  }
  const messages = MESSAGES.exec(path);
  if (req.method !== 'POST' || !messages) {
    answer(res, 404, { code: 20404, message: 'The requested resource was not found', status: 404 });
    return;
  }
  let body = '';
  let tooLarge = false;
  req.setEncoding('utf8');
  req.on('data', (chunk) => {
    if (tooLarge) return;
    body += chunk;
    if (body.length > MAX_FORM_BYTES) tooLarge = true;
  });
  req.on('end', () => {
    if (tooLarge) {
      answer(res, 413, { code: 21617, message: 'request too large for the tour peer', status: 413 });
      return;
    }
    const form = new URLSearchParams(body);
    const to = form.get('To') ?? '';
    const from = form.get('From') ?? '';
    const text = form.get('Body') ?? '';
    if (!to || !text) {
      answer(res, 400, { code: 21604, message: 'To and Body are required', status: 400 });
      return;
    }
    const sid = `SM${String(nextSid++).padStart(8, '0')}${randomBytes(12).toString('hex')}`;
    console.log(`[sms] SMS from ${from} to ${to}: "${clip(text)}" (sid ${sid})`);
    answer(res, 201, { sid, account_sid: messages[1], to, from, body: text, status: 'queued' });
  });
});
sms.maxConnections = MAX_CONNECTIONS;
sms.requestTimeout = 10_000;

/** Listens on every address (no host), so `localhost` reaches it as IPv4 or IPv6. */
function listen(emitter, server, portNumber) {
  return new Promise((resolve, reject) => {
    emitter.once('error', reject);
    emitter.listen(portNumber, () => {
      emitter.off('error', reject);
      resolve(server.address().port);
    });
  });
}

try {
  const [smtpPort, smsPort] = await Promise.all([
    listen(smtp, smtp.server, SMTP_PORT),
    listen(sms, sms, SMS_PORT),
  ]);
  console.log(`peers ready: SMTP on localhost:${smtpPort}, SMS API on http://localhost:${smsPort}`);
} catch (err) {
  console.error(
    `peers could not start: ${err.message} (set PEERS_SMTP_PORT / PEERS_SMS_PORT for other ports)`,
  );
  process.exit(1);
}

function stop() {
  sms.closeAllConnections();
  let open = 2;
  const done = () => {
    if (--open === 0) process.exit(0);
  };
  sms.close(done);
  smtp.close(done);
}
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
