/**
 * `RestDriver`: the one skeleton of the drivers that reach a provider's REST API over HTTP/1.1 (the
 * `http_api` mailer, the `sms_gateway` SMS driver, and any such driver added later). It owns what
 * they all do: one keep-alive agent per backend capped at `max_connections`, a send that refuses a
 * malformed stored payload, makes one bounded request (`http-request.ts`) and turns the answer (or
 * its absence) into a SendOutcome, a health probe that concurrent callers share, and close. A driver
 * adds only its provider's own parts: the request it makes, how it reads the answer (its outcome
 * table), and what its probe asks.
 */
import http from 'node:http';
import https from 'node:https';

import type { Logger } from '../../../shared/logging/logger';
import { silentLogger } from '../../../shared/logging/logger';
import type { DriverSendContext, SendOutcome } from '../delivery/driver';
import type { BackendHealthResult } from './backend-registry';
import { boundedRequest, type HttpAnswer, type NoAnswer, noAnswerOutcome } from './http-request';
import type { OutcomeDecision } from './outcome-table';

/** The longest a health probe may take (below the health checker's default 5 s per check). */
export const REST_PROBE_TIMEOUT_MS = 4000;

/** One request a driver makes: the method, a URL below the backend's base, headers, a text body. */
export interface RestRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body?: string;
}

/** What every REST driver is built from. */
export interface RestDriverOptions {
  /** The backend's configured name. */
  name: string;
  /** The driver kind (`http_api`, `sms_gateway`), for metrics and logs. */
  driver: string;
  /** The logger's `component`. */
  component: string;
  /** The provider's base URL (`base_url`); a trailing slash is optional. */
  baseUrl: string;
  /** Most sockets open to the provider at once (`max_connections`). */
  maxConnections: number;
  /** How long one request may take (`timeout_ms`); a probe takes at most REST_PROBE_TIMEOUT_MS. */
  timeoutMs: number;
  /** The driver's table of the cases without an answer (timeout, connection, aborted). */
  noAnswer: Readonly<Record<NoAnswer['kind'], OutcomeDecision>>;
  logger?: Logger;
}

/** The REST skeleton a driver extends. */
export abstract class RestDriver<P> {
  readonly name: string;
  readonly driver: string;
  /** The provider's base URL, ending in `/`: a driver's paths resolve below it. */
  protected readonly base: URL;
  protected readonly log: Logger;
  private readonly agent: http.Agent;
  private readonly timeoutMs: number;
  private readonly noAnswer: RestDriverOptions['noAnswer'];
  private probing: Promise<BackendHealthResult> | undefined;
  private closed = false;

  protected constructor(opts: RestDriverOptions) {
    this.name = opts.name;
    this.driver = opts.driver;
    this.timeoutMs = opts.timeoutMs;
    this.noAnswer = opts.noAnswer;
    this.base = new URL(opts.baseUrl.replace(/\/+$/, '') + '/');
    const Agent = this.base.protocol === 'https:' ? https.Agent : http.Agent;
    this.agent = new Agent({ keepAlive: true, maxSockets: opts.maxConnections });
    this.log = (opts.logger ?? silentLogger()).child({ component: opts.component, backend: opts.name });
  }

  /** Why a stored payload cannot be sent (the whole reason: "malformed ... payload: ..."), if so. */
  protected abstract malformed(payload: P): string | undefined;
  /** The provider request that sends `payload`. */
  protected abstract sendRequest(payload: P, ctx: DriverSendContext): RestRequest;
  /** The outcome of a provider's answer, from the driver's outcome table. */
  protected abstract classify(answer: HttpAnswer): SendOutcome;
  /** The request of a health probe (GET, no body). */
  protected abstract probeRequest(): Omit<RestRequest, 'method' | 'body'>;
  /**
   * The health of a probe that got an answer: healthy unless the driver says otherwise (a message
   * makes it degraded).
   */
  protected answerProblem(_answer: HttpAnswer): string | undefined {
    return undefined;
  }
  /** How a failed probe names the provider's API ("mail API", "SMS API"). */
  protected abstract readonly apiName: string;
  /** Details a driver adds to every health result of its own. */
  protected healthDetails(): Record<string, unknown> {
    return {};
  }

  /**
   * Sends `payload` once; every answer (or its absence) becomes a SendOutcome. After close, a send
   * is retryable and connects to nothing.
   */
  async send(payload: P, ctx: DriverSendContext): Promise<SendOutcome> {
    const problem = this.malformed(payload);
    if (problem !== undefined) return { class: 'permanent', reason: problem };
    if (this.closed) return noAnswerOutcome(this.noAnswer, { kind: 'aborted', code: 'closed' });
    const request = this.sendRequest(payload, ctx);
    const result = await boundedRequest({
      ...request,
      agent: this.agent,
      timeoutMs: this.timeoutMs,
      signal: ctx.signal,
    });
    const outcome = 'status' in result ? this.classify(result) : noAnswerOutcome(this.noAnswer, result);
    if (outcome.class !== 'sent') {
      this.log.warn(
        {
          deliveryId: ctx.deliveryId,
          attempt: ctx.attempt,
          outcome: outcome.class,
          code: outcome.providerCode,
        },
        `${this.driver} send failed`,
      );
    }
    return outcome;
  }

  /**
   * Probes the provider within REST_PROBE_TIMEOUT_MS: degraded without an answer or when the driver
   * finds a problem in it, never throws. Concurrent probes share one request.
   */
  checkHealth(): Promise<BackendHealthResult> {
    this.probing ??= this.probe().finally(() => {
      this.probing = undefined;
    });
    return this.probing;
  }

  /** Closes the keep-alive connections; a later send is retryable without connecting. */
  async close(): Promise<void> {
    this.closed = true;
    this.agent.destroy();
  }

  private async probe(): Promise<BackendHealthResult> {
    const started = performance.now();
    const result = await boundedRequest({
      method: 'GET',
      ...this.probeRequest(),
      agent: this.agent,
      timeoutMs: Math.min(this.timeoutMs, REST_PROBE_TIMEOUT_MS),
    });
    const details = {
      backend: this.name,
      driver: this.driver,
      latency_ms: Math.round(performance.now() - started),
      ...this.healthDetails(),
    };
    if ('status' in result) {
      const problem = this.answerProblem(result);
      return problem === undefined
        ? { status: 'healthy', details }
        : { status: 'degraded', details, message: problem };
    }
    const why = noAnswerOutcome(this.noAnswer, result).reason;
    return { status: 'degraded', details, message: `${this.apiName} check failed: ${why}` };
  }
}
