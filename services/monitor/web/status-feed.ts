/**
 * The live side of the status page: the open server-sent-event streams and what they are fed.
 *
 * One subscription per StatusSource channel serves every browser (taken with the first stream,
 * dropped with the last), so the areas' listener caps never limit viewers and an idle monitor holds
 * no listener and no timer. Each change is serialised once and written to every stream. Bounds: the
 * number of streams (`web.max_sse_connections`; the route answers 429 beyond), and the bytes waiting
 * to reach each browser (`web.sse_max_buffered_bytes`): a stream that falls behind is closed, and
 * its browser reconnects and starts again from a fresh snapshot, so nothing is lost.
 */
import type { ServerResponse } from 'node:http';
import type { Logger } from '../../../shared/logging/logger';
import { sseComment, sseFrame, sseRetry } from '../../../shared/streams/sse';
import { type StatusSnapshotJson, toAlertJson, toOnCallJson, toSloJson, toTargetJson } from './status-json';
import type { Alert, StatusSource, Unsubscribe } from './status-source';

/** The bounds and periods of the feed (from the `web` config section). */
export interface StatusFeedOptions {
  source: StatusSource;
  logger: Logger;
  /** Open streams at most; `open` refuses beyond. */
  maxConnections: number;
  /** Bytes buffered towards one browser at most; a stream over it is closed. */
  maxBufferedBytes: number;
  /** Alerts in a snapshot. */
  recentAlerts: number;
  /** Period of the SLO refresh (their figures change with time, not only on events). */
  sloRefreshMs: number;
  /** Period of the heartbeat comment that keeps proxies from closing a quiet stream. */
  heartbeatMs: number;
  /** Aborted when the server begins to shut down: every stream ends, new ones are refused. */
  shutdownSignal?: AbortSignal;
}

/** What `open` did. */
export type OpenOutcome = 'opened' | 'too_many' | 'shutting_down';

/** Fans the StatusSource out to the open event streams. */
export class StatusFeed {
  private readonly streams = new Set<ServerResponse>();
  private subscriptions: Unsubscribe[] = [];
  private timers: NodeJS.Timeout[] = [];
  private lastSlos = '';
  private lastOnCall = '';
  private closed = false;
  private readonly logger: Logger;

  constructor(private readonly opts: StatusFeedOptions) {
    this.logger = opts.logger.child({ component: 'status-feed' });
    // One listener on the long-lived shutdown signal for all streams, never one per stream.
    opts.shutdownSignal?.addEventListener('abort', () => this.close(), { once: true });
  }

  /** Open event streams now. */
  get connectionCount(): number {
    return this.streams.size;
  }

  /** The page's whole state now. */
  snapshot(): StatusSnapshotJson {
    const { source } = this.opts;
    return {
      generated_at: new Date().toISOString(),
      alert_limit: this.opts.recentAlerts,
      targets: source.targets().map(toTargetJson),
      slos: source.slos().map(toSloJson),
      alerts: source.recentAlerts(this.opts.recentAlerts).slice(0, this.opts.recentAlerts).map(toAlertJson),
      oncall: this.onCall(),
    };
  }

  /**
   * Starts an event stream on `res` (headers already chosen by `headers`): the `snapshot` event, then
   * one event per change until the browser leaves or the server stops. Writes nothing when refused.
   */
  open(res: ServerResponse, headers: Record<string, string>): OpenOutcome {
    if (this.closed || this.opts.shutdownSignal?.aborted) return 'shutting_down';
    if (this.streams.size >= this.opts.maxConnections) return 'too_many';
    if (this.streams.size === 0) this.subscribe();
    res.writeHead(200, headers);
    // Snapshot and registration in one synchronous step: an alert dispatched after the snapshot
    // was read reaches this stream as an event, one dispatched before is in the snapshot; none twice.
    const snapshot = this.snapshot();
    this.streams.add(res);
    res.on('close', () => this.forget(res));
    this.write(res, sseRetry());
    this.write(res, frame('snapshot', snapshot));
    return 'opened';
  }

  /** Ends every stream and drops the subscriptions; later `open` calls are refused. */
  close(): void {
    this.closed = true;
    for (const res of [...this.streams]) {
      this.streams.delete(res);
      if (!res.writableEnded) res.end();
    }
    this.unsubscribe();
  }

  private subscribe(): void {
    const { source } = this.opts;
    this.lastSlos = JSON.stringify(source.slos().map(toSloJson));
    this.lastOnCall = JSON.stringify(this.onCall());
    this.subscriptions = [
      source.onTargetChange(() => this.guard('targets', () => this.broadcastTargets())),
      source.onAlert((alert) => this.guard('alert', () => this.broadcastAlert(alert))),
    ];
    this.timers = [
      setInterval(() => this.guard('slos', () => this.refreshSlos()), this.opts.sloRefreshMs),
      setInterval(() => this.broadcast(sseComment('heartbeat')), this.opts.heartbeatMs),
      // Issue 28: who is on call changes at hand-offs and override edges, read on the SLO period.
      setInterval(() => this.guard('oncall', () => this.refreshOnCall()), this.opts.sloRefreshMs),
    ];
    for (const timer of this.timers) timer.unref();
  }

  private unsubscribe(): void {
    for (const unsubscribe of this.subscriptions.splice(0)) unsubscribe();
    for (const timer of this.timers.splice(0)) clearInterval(timer);
  }

  private forget(res: ServerResponse): void {
    if (this.streams.delete(res) && this.streams.size === 0) this.unsubscribe();
  }

  private broadcastTargets(): void {
    this.broadcast(frame('targets', { targets: this.opts.source.targets().map(toTargetJson) }));
  }

  private broadcastAlert(alert: Alert): void {
    this.broadcast(frame('alert', { alert: toAlertJson(alert) }));
  }

  private refreshSlos(): void {
    const slos = this.opts.source.slos().map(toSloJson);
    const text = JSON.stringify(slos);
    // Unchanged figures are not sent again: an idle SLO costs nothing per period.
    if (text === this.lastSlos) return;
    this.lastSlos = text;
    this.broadcast(sseFrame({ event: 'slos', json: `{"slos":${text}}` }));
  }

  /** The on-call schedules now (empty when the source has none). */
  private onCall() {
    return (this.opts.source.onCall?.() ?? []).map(toOnCallJson);
  }

  private refreshOnCall(): void {
    const text = JSON.stringify(this.onCall());
    // Sent only when someone's shift changed: between hand-offs a schedule costs nothing per period.
    if (text === this.lastOnCall) return;
    this.lastOnCall = text;
    this.broadcast(sseFrame({ event: 'oncall', json: `{"oncall":${text}}` }));
  }

  private broadcast(text: string): void {
    for (const res of [...this.streams]) this.write(res, text);
  }

  private write(res: ServerResponse, text: string): void {
    if (res.writableEnded || res.destroyed) return;
    // writableLength counts what the response and its socket still hold for the browser.
    const waiting = res.writableLength;
    if (waiting > 0 && waiting + Buffer.byteLength(text) > this.opts.maxBufferedBytes) {
      this.logger.info({ buffered: waiting }, 'status stream fell behind; closed for a fresh snapshot');
      this.streams.delete(res);
      res.destroy();
      if (this.streams.size === 0) this.unsubscribe();
      return;
    }
    res.write(text);
  }

  /** A listener called by another area must never throw into it. */
  private guard(what: string, run: () => void): void {
    try {
      run();
    } catch (err) {
      this.logger.error({ err, event: what }, 'status feed could not send an update');
    }
  }
}

/** One SSE event: its name and a single-line JSON `data` (the one SSE writer). */
function frame(event: string, data: unknown): string {
  return sseFrame({ event, data });
}
