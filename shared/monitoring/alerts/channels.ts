/**
 * Alert channels: where a tier's alerts go. A channel receives batches: one alert at a time for
 * P0 (and P1 within business hours), the held P1 alerts at opening time, a P2 digest per interval.
 */
import { type Logger, silentLogger } from '../../logging/logger';
import { boundedRequest, isAnswer } from '../../http/outbound';
import { AlertDeliveryError } from '../errors';
import { Backoff, sleepMs } from '../../runtime/backoff';
import type { AlertContext, AlertSeverity } from './dispatcher';
import { alertLogLevel, severityRank } from './dispatcher';
import type { AlertTier } from './tiers';

/** One alert as the tier-aware dispatcher keeps and forwards it. */
export interface AlertRecord {
  /** `metric` for sendMetricAlert, with `metric` set. */
  kind: 'alert' | 'metric';
  title: string;
  message: string;
  severity: AlertSeverity;
  context: AlertContext;
  tier: AlertTier;
  /** Wall-clock milliseconds when the alert was raised. */
  raisedAt: number;
  metric?: { name: string; currentValue: number; threshold: number };
  /** Identity given by whoever raised it (the monitor's alert id), for channels that need one. */
  id?: string;
  /** The service that raised it, when known. */
  sourceService?: string;
}

/** Why a batch is sent now. */
export type AlertBatchReason = 'immediate' | 'business_hours_opened' | 'digest' | 'shutdown';

/** What a channel receives. */
export interface AlertBatch {
  tier: AlertTier;
  reason: AlertBatchReason;
  alerts: readonly AlertRecord[];
  /** Alerts of this tier dropped since the last batch because its buffer was full (oldest first). */
  dropped: number;
}

/** A destination of alerts. `send` rejects when the batch could not be delivered. */
export interface AlertChannel {
  /** Shown in logs; never a URL or a secret. */
  readonly name: string;
  send(batch: AlertBatch): Promise<void>;
}

/** Writes each alert of a batch as a log line (the logging dispatcher's levels), and a digest as one line. */
export class LogAlertChannel implements AlertChannel {
  readonly name = 'log';
  constructor(private readonly logger: Logger = silentLogger()) {}

  async send(batch: AlertBatch): Promise<void> {
    if (batch.reason === 'digest') {
      const worst = batch.alerts.some((a) => alertLogLevel(a.severity) === 'error') ? 'error' : 'warn';
      this.logger[worst](
        {
          event: 'alert_digest',
          tier: batch.tier,
          count: batch.alerts.length,
          dropped: batch.dropped,
          alerts: batch.alerts.map((a) => ({ alert: a.title, severity: a.severity })),
        },
        `alert digest: ${batch.alerts.length} alerts`,
      );
      return;
    }
    for (const a of batch.alerts) {
      this.logger[alertLogLevel(a.severity)](
        {
          event: 'alert',
          alert: a.title,
          severity: a.severity,
          tier: a.tier,
          reason: batch.reason,
          context: a.context,
        },
        a.message,
      );
    }
  }
}

/**
 * Passes on only the alerts at or above a minimum severity (see {@link severityRank}); a batch left
 * empty is not sent, unless it reports dropped alerts.
 */
export class SeverityFilterChannel implements AlertChannel {
  readonly name: string;
  private readonly min: number;

  constructor(
    private readonly inner: AlertChannel,
    minSeverity: AlertSeverity,
  ) {
    this.name = inner.name;
    this.min = severityRank(minSeverity);
  }

  async send(batch: AlertBatch): Promise<void> {
    const alerts = batch.alerts.filter((a) => severityRank(a.severity) >= this.min);
    if (alerts.length === 0 && batch.dropped === 0) return;
    await this.inner.send(alerts.length === batch.alerts.length ? batch : { ...batch, alerts });
  }
}

/** Options of WebhookChannel. */
export interface WebhookChannelOptions {
  /** Endpoint receiving `POST` with a JSON body. May carry a token: it is never logged unredacted. */
  url: string;
  /** Extra request headers (for example `Authorization`); never logged. */
  headers?: Readonly<Record<string, string>>;
  /** Seconds one attempt may take (default 5). */
  timeoutSeconds?: number;
  /** Attempts after the first one (default 3). */
  maxRetries?: number;
  /** Seconds before the first retry, doubled each retry (default 0.5), capped at `maxBackoffSeconds` (default 30). */
  backoffSeconds?: number;
  maxBackoffSeconds?: number;
  /** Name in logs (default `webhook`). */
  name?: string;
  /**
   * The request bodies of a batch, one POST each, sent in order (default: one POST of
   * {@link webhookBody}). The monitor posts each alert on its own, in its proto JSON form.
   */
  encode?: (batch: AlertBatch) => string[];
  /** Injectable wait, for tests. */
  sleep?: (ms: number) => Promise<void>;
  logger?: Logger;
}

/** The JSON body a webhook receives. Field names are snake_case like the rest of our JSON. */
export interface WebhookBody {
  tier: AlertTier;
  reason: AlertBatchReason;
  dropped: number;
  alerts: Array<{
    kind: 'alert' | 'metric';
    title: string;
    message: string;
    severity: string;
    tier: AlertTier;
    raised_at: string;
    context: AlertContext;
    metric?: { name: string; current_value: number; threshold: number };
  }>;
}

/** The webhook body of a batch. */
export function webhookBody(batch: AlertBatch): WebhookBody {
  return {
    tier: batch.tier,
    reason: batch.reason,
    dropped: batch.dropped,
    alerts: batch.alerts.map((a) => ({
      kind: a.kind,
      title: a.title,
      message: a.message,
      severity: a.severity,
      tier: a.tier,
      raised_at: new Date(a.raisedAt).toISOString(),
      context: a.context,
      ...(a.metric
        ? {
            metric: {
              name: a.metric.name,
              current_value: a.metric.currentValue,
              threshold: a.metric.threshold,
            },
          }
        : {}),
    })),
  };
}

/** The scheme, host and port of a URL: webhook paths and queries often hold the secret (Slack, Teams). */
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '[unparseable url]';
  }
}

/** Statuses worth another attempt: the receiver may accept the same body later. */
function retryable(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/**
 * POSTs each batch as JSON (or the bodies `encode` makes of it). Network errors, timeouts, 408, 429 and 5xx are retried up to
 * `maxRetries` times with doubling backoff; another 4xx fails at once (the same body would fail
 * again), and so does a redirect, which is not followed. The response body is not read (a receiver
 * cannot make us buffer it).
 */
export class WebhookChannel implements AlertChannel {
  readonly name: string;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly backoff: Backoff;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly logger: Logger;

  constructor(private readonly options: WebhookChannelOptions) {
    this.name = options.name ?? 'webhook';
    this.timeoutMs = (options.timeoutSeconds ?? 5) * 1000;
    this.maxRetries = options.maxRetries ?? 3;
    this.backoff = new Backoff({
      baseMs: (options.backoffSeconds ?? 0.5) * 1000,
      maxMs: (options.maxBackoffSeconds ?? 30) * 1000,
    });
    this.sleep = options.sleep ?? ((ms) => sleepMs(ms));
    this.logger = options.logger ?? silentLogger();
  }

  async send(batch: AlertBatch): Promise<void> {
    const bodies = this.options.encode ? this.options.encode(batch) : [JSON.stringify(webhookBody(batch))];
    for (const body of bodies) await this.post(body);
  }

  private async post(body: string): Promise<void> {
    let lastProblem = '';
    for (let attempt = 0; attempt <= this.maxRetries; attempt++) {
      if (attempt > 0) await this.sleep(this.backoff.delayMs(attempt));
      // The one bounded request (shared/http/outbound.ts): it never follows a redirect, which would
      // carry the alert (and maybe its headers) to a host nobody configured, and reads no body.
      const res = await boundedRequest({
        method: 'POST',
        url: this.options.url,
        headers: { 'content-type': 'application/json', ...this.options.headers },
        body,
        timeoutMs: this.timeoutMs,
        maxBodyBytes: 0,
      });
      if (isAnswer(res)) {
        if (res.status >= 200 && res.status < 300) return;
        lastProblem = `HTTP ${res.status}`;
        if (!retryable(res.status)) break;
      } else {
        lastProblem = res.kind === 'timeout' ? 'timed out' : 'connection failed';
      }
      this.logger.warn(
        {
          channel: this.name,
          target: originOf(this.options.url),
          attempt: attempt + 1,
          problem: lastProblem,
        },
        'alert webhook attempt failed',
      );
    }
    throw new AlertDeliveryError(`alert channel ${this.name} did not accept the alerts (${lastProblem})`);
  }
}
