/**
 * The one server-sent-events writer: the response headers, the `retry:` advice, frames and comments.
 * Every SSE route (the admin inbox stream, the status page) writes through these, so a browser sees
 * the same framing and reconnect delay from both services.
 */

/** Delay a browser waits before reconnecting a dropped stream (the SSE `retry:` field). */
export const SSE_RETRY_MS = 2000;

/** Headers of an event stream (add the route's security headers). */
export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-store',
  Connection: 'keep-alive',
  // Tell buffering reverse proxies (nginx) to pass events through at once.
  'X-Accel-Buffering': 'no',
};

/** One SSE event. */
export interface SseFrame {
  /** Sets the browser's Last-Event-ID (a cursor: ours, so it has no line break). */
  id?: string;
  /** The event name; absent for an `id:`-only frame. */
  event?: string;
  /** Sent as a single-line JSON `data` (JSON.stringify escapes line breaks). */
  data?: unknown;
  /** `data` already serialised as single-line JSON (a payload built once for many streams). */
  json?: string;
}

/** Formats one SSE event. */
export function sseFrame(frame: SseFrame): string {
  let text = '';
  if (frame.id !== undefined) text += `id: ${frame.id}\n`;
  if (frame.event !== undefined) text += `event: ${frame.event}\n`;
  if (frame.json !== undefined) text += `data: ${frame.json}\n`;
  else if (frame.data !== undefined) text += `data: ${JSON.stringify(frame.data)}\n`;
  return `${text}\n`;
}

/** An SSE comment line (heartbeats, `connected`): browsers ignore it, proxies see traffic. */
export function sseComment(text: string): string {
  return `: ${text}\n\n`;
}

/** The first write of every stream: how long a browser waits before it reconnects. */
export function sseRetry(ms: number = SSE_RETRY_MS): string {
  return `retry: ${ms}\n\n`;
}
