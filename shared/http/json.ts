/** JSON responses of the HTTP gateway routes (admin, /health, errors): the one writer. */
import type { ServerResponse } from 'node:http';

/** Writes `body` as JSON with `status`; responses are never cached unless a header says otherwise. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(payload),
    'Cache-Control': 'no-store',
    ...headers,
  });
  res.end(payload);
}
