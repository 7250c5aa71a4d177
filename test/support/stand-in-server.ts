/**
 * The plumbing every HTTP provider stand-in shares (SendGrid v3, Twilio): listen on 127.0.0.1 and a
 * free port, and close with the keep-alive connections clients still hold (a plain `server.close()`
 * waits for them).
 */
import type http from 'node:http';
import type { Socket } from 'node:net';

/** A stand-in server listening. */
export interface ServedStandIn {
  /** `http://127.0.0.1:<port>` */
  baseUrl: string;
  /** Ends every open connection and stops listening. */
  close(): Promise<void>;
}

/** Starts `server` on 127.0.0.1 and a free port. */
export async function serveStandIn(server: http.Server): Promise<ServedStandIn> {
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
