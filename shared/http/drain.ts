/**
 * Back-pressure for responses written in pieces (a streamed /metrics scrape, a Connect stream): after
 * `res.write` returns false, wait for `drain` before the next piece, or for `close` when the client
 * went away (a `drain` never comes then, and waiting for it alone would hang the writer).
 */
import type { ServerResponse } from 'node:http';

/** Resolves when `res` can take more, or is closed. */
export function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
