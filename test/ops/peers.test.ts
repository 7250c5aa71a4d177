/**
 * `npm run peers` (scripts/peers.mjs), the tour's local stand-ins, as a real process: what it prints
 * for an email and an SMS, how it answers the SMS driver, and its bounds (form size, printed text,
 * port variables).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

import nodemailer from 'nodemailer';

import { waitFor } from '../support/wait';

const ROOT = join(__dirname, '..', '..');
const SCRIPT = join(ROOT, 'scripts', 'peers.mjs');
const MAX_FORM_BYTES = 64 * 1024;
const MAX_PRINTED_CHARS = 2000;

interface Peers {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function startPeers(env: Record<string, string>): Peers {
  let output = '';
  const child = spawn(process.execPath, [SCRIPT], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (c: Buffer) => (output += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

describe('npm run peers', () => {
  let peers: Peers;
  let smtpPort: number;
  let smsBase: string;
  const messages = '/2010-04-01/Accounts/ACtour/Messages.json';
  const form = (fields: Record<string, string>): Promise<Response> =>
    fetch(`${smsBase}${messages}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });

  beforeAll(async () => {
    peers = startPeers({ PEERS_SMTP_PORT: '0', PEERS_SMS_PORT: '0' });
    await waitFor(() => peers.output().includes('peers ready'), 'the peers', 30_000);
    const ready = /SMTP on localhost:(\d+), SMS API on (http:\/\/localhost:\d+)/.exec(peers.output())!;
    smtpPort = Number(ready[1]);
    smsBase = ready[2]!;
  });

  afterAll(async () => {
    if (peers.child.exitCode === null) peers.child.kill('SIGKILL');
    await peers.exited;
  });

  it('prints an email with its envelope, subject and text, the text cut at its bound', async () => {
    const transport = nodemailer.createTransport({
      host: 'localhost',
      port: smtpPort,
      secure: false,
      ignoreTLS: true,
    });
    try {
      await transport.sendMail({
        from: 'noreply@example.com',
        to: 'jane@example.com',
        subject: 'Hello',
        text: 'Hi Jane',
      });
      await transport.sendMail({
        from: 'noreply@example.com',
        to: 'long@example.com',
        subject: 'Long',
        text: 'x'.repeat(MAX_PRINTED_CHARS + 5),
      });
    } finally {
      transport.close();
    }
    await waitFor(() => peers.output().includes('to long@example.com'), 'the long email', 15_000);
    expect(peers.output()).toMatch(
      /\[smtp\] email from noreply@example\.com to jane@example\.com: "Hello" \(\d+ bytes\)\n {4}Hi Jane\n/,
    );
    // Exactly the bound printed, then how much was left out.
    expect(peers.output()).toContain(`    ${'x'.repeat(MAX_PRINTED_CHARS)}… (5 more characters)`);
    expect(peers.output()).not.toContain('x'.repeat(MAX_PRINTED_CHARS + 1));
  });

  it('answers an SMS like the Twilio Messages API (201, a 34-character sid) and prints it', async () => {
    const res = await form({ To: '+15551234567', From: '+15550001111', Body: 'code 42' });
    expect(res.status).toBe(201);
    const body = (await res.json()) as { sid: string; status: string; to: string; account_sid: string };
    expect(body).toMatchObject({ status: 'queued', to: '+15551234567', account_sid: 'ACtour' });
    expect(body.sid).toMatch(/^SM[0-9a-f]{32}$/);
    // The line is written before the answer, but a pipe may hand it to us after the answer came.
    const line = `[sms] SMS from +15550001111 to +15551234567: "code 42" (sid ${body.sid})`;
    await waitFor(() => peers.output().includes(line), 'the printed SMS', 15_000);
  });

  it('answers the driver health probe and refuses what the API would', async () => {
    const account = await fetch(`${smsBase}/2010-04-01/Accounts/ACtour.json`);
    expect(account.status).toBe(200);
    expect(await account.json()).toEqual({ sid: 'ACtour', status: 'active' });
    expect((await fetch(`${smsBase}/elsewhere`)).status).toBe(404);
    expect((await form({ To: '+15551234567' })).status).toBe(400);
  });

  it('takes a form of exactly its bound and refuses one byte more with 413', async () => {
    const fixed = new URLSearchParams({ To: '+15551234567', From: '+1', Body: '' }).toString();
    const fill = 'y'.repeat(MAX_FORM_BYTES - fixed.length);
    const atBound = new URLSearchParams({ To: '+15551234567', From: '+1', Body: fill }).toString();
    expect(atBound.length).toBe(MAX_FORM_BYTES);
    const post = (body: string): Promise<Response> =>
      fetch(`${smsBase}${messages}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
      });
    expect((await post(atBound)).status).toBe(201);
    expect((await post(`${atBound}y`)).status).toBe(413);
    // Still serving after the refusal.
    expect((await form({ To: '+15551234567', Body: 'after' })).status).toBe(201);
  });

  it('stops on SIGINT with exit 0', async () => {
    peers.child.kill('SIGINT');
    expect(await peers.exited).toBe(0);
  });

  it('refuses a port variable that is not a port (exit 2, naming it)', async () => {
    const bad = startPeers({ PEERS_SMTP_PORT: 'abc', PEERS_SMS_PORT: '0' });
    expect(await bad.exited).toBe(2);
    expect(bad.output()).toContain('PEERS_SMTP_PORT must be a port number (0-65535), got "abc"');
  });
});
