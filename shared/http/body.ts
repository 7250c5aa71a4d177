/**
 * Reading a request body with a bound: the one reader for gateway routes that take a body they must
 * see whole (a signature covers the raw bytes). Over the bound, reading stops at once: the caller
 * answers 413 and closes the connection, so nothing more of the body is buffered.
 */
import type { IncomingMessage } from 'node:http';

/** A body over the limit. */
export const BODY_TOO_LARGE = Symbol('body too large');

/**
 * The whole body, or BODY_TOO_LARGE as soon as `Content-Length` or the bytes received exceed
 * `maxBytes` (the rest is not read). Rejects when the request fails (client gone).
 */
export function readBoundedBody(
  req: IncomingMessage,
  maxBytes: number,
): Promise<Buffer | typeof BODY_TOO_LARGE> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return Promise.resolve(BODY_TOO_LARGE);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBytes) {
        cleanup();
        req.pause();
        resolve(BODY_TOO_LARGE);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (err: Error): void => {
      cleanup();
      reject(err);
    };
    const cleanup = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}
