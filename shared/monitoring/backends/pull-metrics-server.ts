/**
 * The pull-metrics backend's own HTTP server: one path (`/metrics` by default) behind an optional
 * bearer token, 404 elsewhere. A taken port (or one the process may not bind) logs a warning and
 * start-up continues without the server.
 */
import { createServer, type Server } from 'node:http';
import type { Logger } from '../../logging/logger';
import { isAuthorized, pathOf, sendNotFound, sendUnauthorized } from '../http/auth';
import type { RequestHandler } from '../http/metrics-middleware';

/** Options of startMetricsServer. */
export interface MetricsServerOptions {
  port: number;
  /** Host to bind; all interfaces when undefined. */
  host?: string;
  path: string;
  token: string | null | undefined;
  handler: RequestHandler;
  logger: Logger;
}

/** Listens; resolves to the server, or to undefined when the port is unavailable (warned). */
export async function startMetricsServer(options: MetricsServerOptions): Promise<Server | undefined> {
  const { port, path, token, handler, logger } = options;
  const server = createServer((req, res) => {
    if (pathOf(req) !== path) return sendNotFound(res);
    if (!isAuthorized(req, token)) return sendUnauthorized(res);
    handler(req, res);
  });
  return new Promise<Server | undefined>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      server.off('listening', onListening);
      if (err.code === 'EADDRINUSE' || err.code === 'EACCES') {
        logger.warn({ port, code: err.code }, 'metrics server port unavailable; continuing without it');
        resolve(undefined);
      } else {
        reject(err);
      }
    };
    const onListening = (): void => {
      server.off('error', onError);
      resolve(server);
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, options.host);
  });
}

/** Closes the server and its open connections (nothing when undefined). */
export async function stopMetricsServer(server: Server | undefined): Promise<void> {
  if (!server) return;
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
