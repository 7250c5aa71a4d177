/**
 * Http2Client against a provider whose first connection goes silent (accepted, never answered: a
 * black-holed route keeps the TCP connection open): the timed-out request's PING goes unanswered,
 * the session is dropped, and a later request reaches the provider over a new connection. A slow
 * provider that still answers PINGs keeps its session.
 */
import * as http2 from 'node:http2';
import net from 'node:net';

import { Http2Client, Http2RequestError } from '../../../../services/notification/channels/push/http2-client';

/** An h2c server answering 200 after `delayMs`, behind a TCP front whose first connection is silent. */
async function start(delayMs: number, silentFirst: boolean) {
  const h2 = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  h2.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  h2.on('stream', (stream) => {
    stream.resume();
    stream.on('end', () => {
      setTimeout(() => {
        if (stream.closed) return;
        stream.respond({ ':status': 200 });
        stream.end('ok');
      }, delayMs);
    });
  });
  await new Promise<void>((resolve) => h2.listen(0, '127.0.0.1', resolve));
  const h2Port = (h2.address() as net.AddressInfo).port;
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  const front = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    accepted++;
    if (silentFirst && accepted === 1) {
      socket.resume(); // read and drop, never answer
      return;
    }
    const out = net.connect(h2Port, '127.0.0.1');
    out.on('error', () => socket.destroy());
    socket.on('close', () => out.destroy());
    out.on('close', () => socket.destroy());
    socket.pipe(out).pipe(socket);
  });
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(front.address() as net.AddressInfo).port}`,
    connections: () => accepted,
    close: async () => {
      for (const s of sockets) s.destroy();
      for (const s of sessions) s.destroy();
      await Promise.all([
        new Promise<void>((r) => front.close(() => r())),
        new Promise<void>((r) => h2.close(() => r())),
      ]);
    },
  };
}

/** The request's answer status, or the kind of its error. */
async function outcome(client: Http2Client): Promise<number | string> {
  try {
    return (await client.request({ method: 'GET', path: '/' })).status;
  } catch (err) {
    if (err instanceof Http2RequestError) return err.kind;
    throw err;
  }
}

test('a session whose peer went silent is dropped after an unanswered PING; the next connection is used', async () => {
  const peer = await start(0, true);
  const client = new Http2Client(peer.origin, { maxStreams: 10, timeoutMs: 300 });
  try {
    const seen: (number | string)[] = [await outcome(client)];
    // The PING after the timeout gets no answer either within 300 ms; until then requests still go
    // to the silent session. Bounded: without the check every one of these would time out.
    for (let i = 0; i < 10 && seen.at(-1) !== 200; i++) seen.push(await outcome(client));
    expect(seen[0]).toBe('timeout');
    expect(seen.at(-1)).toBe(200);
    expect(client.sessionsOpened).toBe(2);
    expect(peer.connections()).toBe(2);
  } finally {
    await client.close();
    await peer.close();
  }
});

test('a slow peer that answers PING keeps its session after a request timed out', async () => {
  const peer = await start(500, false);
  const client = new Http2Client(peer.origin, { maxStreams: 10, timeoutMs: 200 });
  try {
    expect(await outcome(client)).toBe('timeout');
    // Longer than the PING's own timeout: had the PING gone unanswered, the session would be gone.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(client.connected).toBe(true);
    expect(client.sessionsOpened).toBe(1);
    expect(peer.connections()).toBe(1);
  } finally {
    await client.close();
    await peer.close();
  }
});
