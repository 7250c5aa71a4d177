/**
 * MonitorReporter: reports the notification service to the monitor service. It is the delivery
 * pipeline's {@link DeliveryObserver} (a SENT delivery becomes a latency sample of its channel's
 * metric) and the RPC server's unexpected-error hook (an exception becomes CaptureException), and it
 * registers the configured SLOs.
 *
 * Nothing here ever awaits the network on the send path: observing only appends to a bounded buffer
 * (`max_buffered` reports); a flush every `flush_interval_ms` sends the buffer. A full buffer, a
 * failed call (the monitor down, a deadline) and reports still buffered when the final flush at stop
 * runs out of time are dropped and counted on `/metrics`
 * (`notification_monitor_reports_dropped_total{kind,reason}`): reporting never slows or fails a send.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { trace } from '@opentelemetry/api';
import type { Logger } from '../../../shared/logging/logger';
import { silentLogger } from '../../../shared/logging/logger';
import type { Channel, DeliveryObserver, DeliveryOutcome } from '../delivery';
import type { DeliveryReceiptOutcome } from '../delivery/observer';
import type { DeclaredSlo, MonitorReporterConfig } from './config';
import {
  type ExceptionReport,
  MonitorCallError,
  type MonitorSink,
  type SloEventEntry,
} from './monitor-client';
import {
  DefaultSlos,
  RECEIPT_PROVIDER_FAILURES,
  type RatioSloDeclaration,
  SERVICE_FAILURES,
} from './default-slos';
import * as grpc from '@grpc/grpc-js';
import { errorType, scrubText, stackFrames } from './scrub';

/** The metric a channel's delivery latency samples are recorded under (milliseconds). */
export function deliveryLatencyMetric(channel: Channel): string {
  return `notification_delivery_latency_${channel}_ms`;
}

/** Values per RecordSloSamples call (the monitor's batch limit). */
export const MAX_SAMPLES_PER_CALL = 10_000;

/** What a dropped report was. */
export type ReportKind = 'latency_sample' | 'exception' | 'slo_event';
/** Why a report was dropped. */
export type DropReason = 'buffer_full' | 'send_failed' | 'stopped';

/** Options of MonitorReporter. */
export interface MonitorReporterOptions {
  config: MonitorReporterConfig;
  /** The monitor (a MonitorClient in the service). */
  sink: MonitorSink;
  /** The service's registry: the reporter's own counters go there. */
  registry?: Registry;
  logger?: Logger;
  /**
   * The channels whose provider receipts are configured (default-slos.ts `receiptChannels`): each
   * gets a `<prefix><channel>-receipts` SLO. Default none.
   */
  receiptChannels?: readonly Channel[];
}

/** The reporter of one process. */
export class MonitorReporter implements DeliveryObserver {
  private samples = new Map<string, number[]>();
  private exceptions: ExceptionReport[] = [];
  /** Events of the default ratio SLOs: per SLO, per second (epoch ms), good and bad. */
  private events = new Map<string, Map<number, { good: number; bad: number }>>();
  private buffered = 0;
  /** The service's own ratio SLOs (default-slos.ts). */
  readonly defaults: DefaultSlos;
  /** Default SLOs not yet registered (retried on the flush cadence; again after NOT_FOUND). */
  private readonly unregisteredRatio: RatioSloDeclaration[];
  /** Default SLOs the monitor refused (or does not know ratio SLOs): their events are not counted. */
  private readonly refusedRatio = new Set<string>();
  /** SLOs not yet registered (retried on the flush cadence). */
  private readonly unregistered: DeclaredSlo[];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private stopped = false;
  /** The monitor answered the last call: state changes are logged once, not per flush. */
  private reachable = true;
  private readonly log: Logger;
  private readonly dropped: Counter<'kind' | 'reason'> | undefined;
  private readonly sent: Counter<'kind'> | undefined;

  constructor(private readonly options: MonitorReporterOptions) {
    this.log = (options.logger ?? silentLogger()).child({ component: 'monitor-reporter' });
    this.unregistered = [...options.config.slos];
    this.defaults = new DefaultSlos(options.config.default_slos, options.receiptChannels);
    this.unregisteredRatio = [...this.defaults.declarations];
    const registry = options.registry;
    if (registry) {
      this.dropped = new Counter({
        name: 'notification_monitor_reports_dropped_total',
        help: 'Reports to the monitor dropped, by kind (latency_sample, exception) and reason (buffer_full, send_failed, stopped).',
        labelNames: ['kind', 'reason'],
        registers: [registry],
      });
      this.sent = new Counter({
        name: 'notification_monitor_reports_sent_total',
        help: 'Reports the monitor accepted, by kind (latency_sample, exception).',
        labelNames: ['kind'],
        registers: [registry],
      });
      const buffered = () => this.buffered;
      const unregistered = () => this.unregistered.length;
      new Gauge({
        name: 'notification_monitor_buffered_reports',
        help: 'Reports waiting for the next flush to the monitor (bounded by monitor.max_buffered).',
        registers: [registry],
        collect() {
          this.set(buffered());
        },
      });
      new Gauge({
        name: 'notification_monitor_unregistered_slos',
        help: 'Configured SLOs not yet registered at the monitor (retried on every flush).',
        registers: [registry],
        collect() {
          this.set(unregistered());
        },
      });
    }
  }

  /** Reports waiting for the next flush. */
  get bufferedCount(): number {
    return this.buffered;
  }

  /** Names of the configured SLOs not yet registered. */
  get pendingSlos(): string[] {
    return this.unregistered.map((s) => s.name);
  }

  /**
   * A SENT delivery becomes a latency sample (acceptance to SENT, ms) of its channel's metric. A
   * FAILED one is not a latency: it is counted by `notification_deliveries_total{outcome="failed"}`.
   */
  onOutcome(outcome: DeliveryOutcome): void {
    if (this.defaults.enabled) {
      // Counted once, when the sender's part ends (SENT, or FAILED after retries and failover).
      const at = outcome.finishedAt.getTime();
      const sent = outcome.status === 'sent';
      if (sent || (outcome.failure !== null && SERVICE_FAILURES.has(outcome.failure)))
        this.countEvent(this.defaults.deliverySlo(outcome.channel), at, sent);
      if (sent)
        this.countEvent(
          this.defaults.latencySlo(outcome.channel),
          at,
          outcome.latencyMs <= this.defaults.latencyObjectiveMs(outcome.channel),
        );
    }
    if (outcome.status !== 'sent') return;
    if (!this.admit('latency_sample')) return;
    const metric = deliveryLatencyMetric(outcome.channel);
    let list = this.samples.get(metric);
    if (!list) this.samples.set(metric, (list = []));
    list.push(outcome.latencyMs);
  }

  /**
   * A provider receipt ended a delivery (told once per delivery by the process that recorded it): an
   * event of the channel's receipts SLO at the receipt's time, good when DELIVERED, bad when
   * UNDELIVERED for the provider's or the network's reason, none for the recipient's.
   */
  onReceipt(receipt: DeliveryReceiptOutcome): void {
    if (!this.defaults.enabled) return;
    const slo = this.defaults.receiptsSlo(receipt.channel);
    if (slo === undefined) return;
    const delivered = receipt.status === 'delivered';
    if (delivered || receipt.failure === null || RECEIPT_PROVIDER_FAILURES.has(receipt.failure))
      this.countEvent(slo, receipt.receivedAt.getTime(), delivered);
  }

  /**
   * An inbox Send answered: `ok`, or failed on the service's side (a caller's error is no event and
   * is not reported). Counted in the `inbox-send` SLO.
   */
  onInboxSend(ok: boolean): void {
    if (this.defaults.enabled) this.countEvent(this.defaults.inboxSendSlo(), Date.now(), ok);
  }

  /** Adds one event to its SLO's bucket of the second; a new bucket takes a buffer slot. */
  private countEvent(slo: string, atMs: number, good: boolean): void {
    if (this.refusedRatio.has(slo)) return;
    const second = Math.floor(atMs / 1000) * 1000;
    let buckets = this.events.get(slo);
    let bucket = buckets?.get(second);
    if (!bucket) {
      if (!this.admit('slo_event')) return;
      if (!buckets) this.events.set(slo, (buckets = new Map()));
      buckets.set(second, (bucket = { good: 0, bad: 0 }));
    }
    if (good) bucket.good++;
    else bucket.bad++;
  }

  /**
   * Reports an unexpected error as CaptureException: type, scrubbed message, stack frames (no
   * message line) and the active trace id. Never throws.
   */
  captureException(err: unknown): void {
    try {
      if (!this.admit('exception')) return;
      const error =
        err instanceof Error ? err : new Error(typeof err === 'string' ? err : 'non-error thrown');
      const span = trace.getActiveSpan()?.spanContext();
      this.exceptions.push({
        type: errorType(error.name || error.constructor?.name || 'Error'),
        message: scrubText(error.message),
        stacktrace: stackFrames(error.stack),
        traceId: span && trace.isSpanContextValid(span) ? span.traceId : '',
        time: new Date(),
      });
    } catch (e) {
      this.log.debug({ err: e }, 'could not capture an exception for the monitor');
    }
  }

  /** Starts the flush timer and the first SLO registration (not awaited: the monitor may be down). */
  start(): void {
    if (this.timer || this.stopped) return;
    void this.flush();
    this.timer = setInterval(() => void this.flush(), this.options.config.flush_interval_ms);
    this.timer.unref();
  }

  /**
   * Sends what is buffered and retries unregistered SLOs; one flush at a time (a tick during a flush
   * waits for it). Failures are counted and logged, never thrown.
   */
  flush(): Promise<void> {
    this.flushing ??= this.flushOnce().finally(() => (this.flushing = null));
    return this.flushing;
  }

  /**
   * Stops the timer and flushes once more, bounded by `timeout_ms`; what is still buffered is
   * dropped (reason `stopped`). Closes the connection.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.options.config.timeout_ms);
    });
    await Promise.race([this.flushing ?? Promise.resolve(), deadline]).then(() =>
      Promise.race([this.flush(), deadline]),
    );
    clearTimeout(timer);
    this.discard('stopped');
    this.options.sink.close();
  }

  /** Takes a slot in the buffer, or counts the report dropped. */
  private admit(kind: ReportKind): boolean {
    if (this.stopped || this.buffered >= this.options.config.max_buffered) {
      this.dropped?.inc({ kind, reason: this.stopped ? 'stopped' : 'buffer_full' });
      return false;
    }
    this.buffered++;
    return true;
  }

  /** Drops everything buffered with `reason`. */
  private discard(reason: DropReason): void {
    const { samples, exceptions, events } = this.take();
    let count = 0;
    for (const values of samples.values()) count += values.length;
    if (count > 0) this.dropped?.inc({ kind: 'latency_sample', reason }, count);
    if (exceptions.length > 0) this.dropped?.inc({ kind: 'exception', reason }, exceptions.length);
    let buckets = 0;
    for (const b of events.values()) buckets += b.size;
    if (buckets > 0) this.dropped?.inc({ kind: 'slo_event', reason }, buckets);
  }

  /** Empties the buffer and returns what was in it. */
  private take(): {
    samples: Map<string, number[]>;
    exceptions: ExceptionReport[];
    events: Map<string, Map<number, { good: number; bad: number }>>;
  } {
    const taken = { samples: this.samples, exceptions: this.exceptions, events: this.events };
    this.samples = new Map();
    this.exceptions = [];
    this.events = new Map();
    this.buffered = 0;
    return taken;
  }

  /** Puts back events that wait for their SLO's registration (they keep their buffer slots). */
  private putBack(slo: string, entries: readonly SloEventEntry[]): void {
    let buckets = this.events.get(slo);
    if (!buckets) this.events.set(slo, (buckets = new Map()));
    for (const e of entries) {
      const b = buckets.get(e.atMs);
      if (b) {
        b.good += e.good;
        b.bad += e.bad;
      } else {
        buckets.set(e.atMs, { good: e.good, bad: e.bad });
        this.buffered++;
      }
    }
  }

  /** Sends the events of the default SLOs, in chunks of at most 10,000 entries. */
  private async sendEvents(events: Map<string, Map<number, { good: number; bad: number }>>): Promise<void> {
    const waiting = new Set(this.unregisteredRatio.map((d) => d.name));
    for (const [slo, buckets] of events) {
      const entries = [...buckets].map(([atMs, c]) => ({ atMs, good: c.good, bad: c.bad }));
      if (waiting.has(slo)) {
        this.putBack(slo, entries);
        continue;
      }
      for (let i = 0; i < entries.length; i += MAX_SAMPLES_PER_CALL) {
        const chunk = entries.slice(i, i + MAX_SAMPLES_PER_CALL);
        try {
          await this.options.sink.recordSloEvents(slo, chunk);
          this.sent?.inc({ kind: 'slo_event' }, chunk.length);
          this.answered();
        } catch (err) {
          if (err instanceof MonitorCallError && err.code === grpc.status.NOT_FOUND) {
            // The monitor lost the SLO (its memory store restarted): register it again, keep the events.
            const decl = this.defaults.declarations.find((d) => d.name === slo);
            if (decl && !this.unregisteredRatio.includes(decl)) {
              this.unregisteredRatio.push(decl);
              this.log.warn({ slo }, 'the monitor no longer has this SLO: registering it again');
            }
            this.putBack(slo, entries.slice(i));
            break;
          }
          this.failed(err, 'RecordSloSamples');
          this.dropped?.inc({ kind: 'slo_event', reason: 'send_failed' }, chunk.length);
        }
      }
    }
  }

  /** Registers each default SLO not registered yet; ALREADY_EXISTS counts as registered. */
  private async registerRatioSlos(): Promise<void> {
    if (this.stopped) return;
    for (const slo of [...this.unregisteredRatio]) {
      try {
        const result = await this.options.sink.registerRatioSlo(slo);
        this.unregisteredRatio.splice(this.unregisteredRatio.indexOf(slo), 1);
        this.answered();
        if (result === 'exists')
          this.log.warn(
            { slo: slo.name },
            'the monitor has an SLO of this name with another definition: events are recorded into it',
          );
        else this.log.info({ slo: slo.name }, 'SLO registered at the monitor');
      } catch (err) {
        if (err instanceof MonitorCallError && err.refused) {
          this.unregisteredRatio.splice(this.unregisteredRatio.indexOf(slo), 1);
          this.refusedRatio.add(slo.name);
          this.events.delete(slo.name);
          this.log.error({ slo: slo.name, reason: err.message }, 'the monitor refused an SLO declaration');
          continue;
        }
        this.failed(err, 'RegisterRatioSlo');
        return;
      }
    }
  }

  private async flushOnce(): Promise<void> {
    const { sink, config } = this.options;
    await this.registerSlos();
    await this.registerRatioSlos();
    const { samples, exceptions, events } = this.take();
    await this.sendEvents(events);
    for (const [metric, values] of samples) {
      for (let i = 0; i < values.length; i += MAX_SAMPLES_PER_CALL) {
        const chunk = values.slice(i, i + MAX_SAMPLES_PER_CALL);
        try {
          const accepted = await sink.recordSloSamples(metric, chunk);
          this.sent?.inc({ kind: 'latency_sample' }, chunk.length);
          this.answered();
          if (accepted === 0) this.reregisterSlosOf(metric);
        } catch (err) {
          this.failed(err, 'RecordSloSamples');
          this.dropped?.inc({ kind: 'latency_sample', reason: 'send_failed' }, chunk.length);
        }
      }
    }
    for (const [i, report] of exceptions.entries()) {
      try {
        await sink.captureException(report, config.source_service);
        this.sent?.inc({ kind: 'exception' });
        this.answered();
      } catch (err) {
        this.failed(err, 'CaptureException');
        // The monitor is down: one deadline per report would hold the flush for minutes.
        this.dropped?.inc({ kind: 'exception', reason: 'send_failed' }, exceptions.length - i);
        break;
      }
    }
  }

  /**
   * The monitor kept none of a metric's samples although SLOs of ours read it: it has forgotten them
   * (a restart: the monitor keeps SLOs in memory). They are registered again on the next flush.
   */
  private reregisterSlosOf(metric: string): void {
    for (const slo of this.options.config.slos) {
      if (slo.metric === metric && !this.unregistered.includes(slo)) {
        this.unregistered.push(slo);
        this.log.warn({ slo: slo.name, metric }, 'the monitor no longer has this SLO: registering it again');
      }
    }
  }

  /** Registers each unregistered SLO; ALREADY_EXISTS counts as registered, bad input is given up. */
  private async registerSlos(): Promise<void> {
    // At stop only what is buffered is sent: a registration would outlive the service.
    if (this.stopped) return;
    for (const slo of [...this.unregistered]) {
      try {
        const result = await this.options.sink.registerSlo(slo);
        this.unregistered.splice(this.unregistered.indexOf(slo), 1);
        this.answered();
        this.log.info({ slo: slo.name, metric: slo.metric, result }, 'SLO registered at the monitor');
      } catch (err) {
        if (err instanceof MonitorCallError && err.refused) {
          // Retrying cannot help: the declaration itself is refused.
          this.unregistered.splice(this.unregistered.indexOf(slo), 1);
          this.log.error({ slo: slo.name, reason: err.message }, 'the monitor refused an SLO declaration');
          continue;
        }
        this.failed(err, 'RegisterSlo');
        return; // the monitor is unreachable: the rest wait for the next flush
      }
    }
  }

  private answered(): void {
    if (!this.reachable) this.log.info('the monitor is reachable again');
    this.reachable = true;
  }

  private failed(err: unknown, method: string): void {
    const reason = err instanceof Error ? err.message : String(err);
    if (this.reachable)
      this.log.warn(
        { method, reason },
        'reporting to the monitor failed; reports are dropped until it answers',
      );
    else this.log.debug({ method, reason }, 'reporting to the monitor failed');
    this.reachable = false;
  }
}
