/**
 * A minimal server-sent-events reader over node:http for the tests: it keeps every frame (events
 * and comments) and lets a test wait for a condition instead of sleeping.
 */
import { request, type IncomingHttpHeaders } from 'node:http';

/** One blank-line-terminated block of the stream. */
export interface SseFrame {
  id?: string;
  event?: string;
  data?: string;
  comments: string[];
}

/** An open SSE response. */
export interface SseConnection {
  status: number;
  headers: IncomingHttpHeaders;
  frames: SseFrame[];
  /** Events only (frames with data), parsed as JSON. */
  events(): { id?: string; event?: string; data: Record<string, unknown> }[];
  /** Resolves when `predicate` holds for the frames received so far. */
  waitFor(predicate: (frames: SseFrame[]) => boolean): Promise<void>;
  /** Resolves when the server ends the response. */
  ended: Promise<void>;
  close(): void;
}

/** Opens `url` and resolves once the response headers arrived. */
export function openSse(url: string, headers: Record<string, string>): Promise<SseConnection> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { Accept: 'text/event-stream', ...headers } }, (res) => {
      const frames: SseFrame[] = [];
      const waiters: { predicate: (f: SseFrame[]) => boolean; resolve: () => void }[] = [];
      let buffer = '';
      const check = (): void => {
        for (const waiter of [...waiters]) {
          if (waiter.predicate(frames)) {
            waiters.splice(waiters.indexOf(waiter), 1);
            waiter.resolve();
          }
        }
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const frame: SseFrame = { comments: [] };
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) frame.comments.push(line.slice(1).trim());
            else if (line.startsWith('id: ')) frame.id = line.slice(4);
            else if (line.startsWith('event: ')) frame.event = line.slice(7);
            else if (line.startsWith('data: ')) frame.data = line.slice(6);
          }
          frames.push(frame);
        }
        check();
      });
      const ended = new Promise<void>((done) => {
        res.on('end', done);
        res.on('close', done);
      });
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        frames,
        events: () =>
          frames
            .filter((f) => f.data !== undefined)
            .map((f) => ({ id: f.id, event: f.event, data: JSON.parse(f.data!) as Record<string, unknown> })),
        waitFor: (predicate) =>
          new Promise<void>((done) => {
            waiters.push({ predicate, resolve: done });
            check();
          }),
        ended,
        close: () => req.destroy(),
      });
    });
    req.on('error', reject);
    req.end();
  });
}
