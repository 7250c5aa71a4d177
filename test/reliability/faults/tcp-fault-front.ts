/**
 * A TCP front for the HTTP/2 push stand-ins (APNs, FCM): in `forward` mode it pipes each connection
 * to the stand-in behind it; otherwise it fails new connections the way a provider or the network
 * does: `reset` (TCP RST at once), `garbage` (bytes that are no HTTP/2 frames, then close),
 * `silent` (the connection is accepted and never answered: a black hole) or `refuse` (nothing
 * listens on the port: connection refused). Status codes are the
 * stand-ins' own `respond` hooks; this front only breaks the connection under them.
 *
 * Changing the mode resets the forwarded connections (a provider that goes down drops its sessions);
 * silent connections stay silent for as long as the client keeps them, as a black-holed route does.
 */
import net from 'node:net';

/** What the front does with a new connection. */
export type TcpFault = 'forward' | 'reset' | 'garbage' | 'silent' | 'refuse';

/** A running front. */
export interface TcpFaultFront {
  /** The base URL (h2c) the driver is given instead of the stand-in's. */
  baseUrl: string;
  /** The current mode. */
  readonly mode: TcpFault;
  /** Switches the mode; forwarded connections open now are reset (all of them for `refuse`). */
  setMode(mode: TcpFault): Promise<void>;
  /** Connections accepted so far, by the mode they met (`refuse`: times the port was closed). */
  readonly connections: Map<TcpFault, number>;
  close(): Promise<void>;
}

/** A TLS-like record header and text: no HTTP/2 frame, no HTTP/1.1 either. */
const GARBAGE = Buffer.from('\u0016\u0003\u0001\u0000\u0005 garbage, not HTTP/2 \r\n', 'latin1');

/** Starts a front on 127.0.0.1 and a free port, forwarding to `target` (`http://host:port`). */
export async function startTcpFaultFront(target: string): Promise<TcpFaultFront> {
  const upstream = new URL(target);
  const forwarded = new Set<net.Socket>();
  const all = new Set<net.Socket>();
  let mode: TcpFault = 'forward';
  const connections = new Map<TcpFault, number>();
  const server = net.createServer((socket) => {
    all.add(socket);
    socket.on('close', () => all.delete(socket));
    socket.on('error', () => undefined);
    connections.set(mode, (connections.get(mode) ?? 0) + 1);
    switch (mode) {
      case 'forward': {
        const out = net.connect(Number(upstream.port), upstream.hostname);
        out.on('error', () => socket.destroy());
        socket.on('close', () => out.destroy());
        out.on('close', () => socket.destroy());
        socket.pipe(out);
        out.pipe(socket);
        forwarded.add(socket);
        socket.on('close', () => forwarded.delete(socket));
        return;
      }
      case 'reset':
        socket.resetAndDestroy();
        return;
      case 'garbage':
        socket.end(GARBAGE);
        return;
      case 'silent':
      case 'refuse': // a connection accepted just before the port closed: silent too
        socket.resume(); // read and drop: the client's writes never block, nothing comes back
        return;
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    get mode() {
      return mode;
    },
    async setMode(next: TcpFault) {
      const was = mode;
      mode = next;
      for (const s of forwarded) s.resetAndDestroy();
      if (next === 'refuse' && was !== 'refuse') {
        connections.set('refuse', (connections.get('refuse') ?? 0) + 1);
        for (const s of all) s.resetAndDestroy();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      } else if (next !== 'refuse' && was === 'refuse') {
        // The same port again: the driver's base URL does not change.
        await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
      }
    },
    connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of all) s.destroy();
        if (!server.listening) return resolve();
        server.close(() => resolve());
      }),
  };
}
