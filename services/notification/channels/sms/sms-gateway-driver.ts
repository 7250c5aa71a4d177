/**
 * The `sms_gateway` driver: a Twilio-compatible Messages API (form `POST
 * {base_url}/2010-04-01/Accounts/{account_sid}/Messages.json`, HTTP Basic `account_sid:auth_token`,
 * fields To, From, Body), over node:http(s) with a keep-alive agent capped at `max_connections`. The
 * answer is classified from sms-gateway-outcomes.ts. The auth token goes into the Authorization header
 * and nowhere else: not into reasons, logs or errors.
 */
import http from 'node:http';
import https from 'node:https';

import type { Logger } from '../../../../shared/logging/logger';
import { silentLogger } from '../../../../shared/logging/logger';
import type { DriverSendContext, SendOutcome } from '../../delivery/driver';
import { boundedRequest, noAnswerOutcome } from '../http-request';
import type { SmsGatewayDriverConfig } from './config';
import type { BackendHealthResult } from '../backend-registry';
import type { SmsDriver } from './sms-driver';
import { classifySmsGatewayAnswer, SMS_GATEWAY_ERROR_OUTCOMES } from './sms-gateway-outcomes';
import { type SmsPayload, smsPayloadProblem } from './sms-message';

/** The longest a health probe may take (below the health checker's default 5 s per check). */
export const SMS_GATEWAY_PROBE_TIMEOUT_MS = 4000;

/** What the sms_gateway driver is built from. */
export interface SmsGatewayDriverOptions {
  name: string;
  config: SmsGatewayDriverConfig;
  logger?: Logger;
  /**
   * Sent as `StatusCallback` with each message, so the provider posts delivery receipts there
   * (`{webhooks.public_base_url}/webhooks/sms/{backend}/status`); absent: none asked for.
   */
  statusCallbackUrl?: string;
}

/** Why a request ended without an answer. */

/** The `sms_gateway` driver of one named backend. */
export class SmsGatewayDriver implements SmsDriver {
  readonly channel = 'sms' as const;
  readonly driver = 'sms_gateway';
  readonly name: string;
  readonly fromNumber: string;
  private readonly config: SmsGatewayDriverConfig;
  private readonly messagesUrl: URL;
  private readonly accountUrl: URL;
  private readonly authorization: string;
  private readonly statusCallbackUrl: string | undefined;
  private readonly agent: http.Agent;
  private readonly log: Logger;
  private probing: Promise<BackendHealthResult> | undefined;
  private closed = false;

  constructor(opts: SmsGatewayDriverOptions) {
    this.name = opts.name;
    this.config = opts.config;
    this.fromNumber = opts.config.from_number;
    const base = new URL(opts.config.base_url.replace(/\/+$/, '') + '/');
    const account = `2010-04-01/Accounts/${encodeURIComponent(opts.config.account_sid)}`;
    this.messagesUrl = new URL(`${account}/Messages.json`, base);
    this.accountUrl = new URL(`${account}.json`, base);
    this.statusCallbackUrl = opts.statusCallbackUrl;
    this.authorization = `Basic ${Buffer.from(`${opts.config.account_sid}:${opts.config.auth_token}`).toString('base64')}`;
    const Agent = base.protocol === 'https:' ? https.Agent : http.Agent;
    this.agent = new Agent({ keepAlive: true, maxSockets: opts.config.max_connections });
    this.log = (opts.logger ?? silentLogger()).child({ component: 'sms-gateway-driver', backend: opts.name });
  }

  /** Posts `payload` once; every answer (or its absence) becomes a SendOutcome. */
  async send(payload: SmsPayload, ctx: DriverSendContext): Promise<SendOutcome> {
    const problem = smsPayloadProblem(payload);
    if (problem !== undefined) return { class: 'permanent', reason: `malformed SMS payload: ${problem}` };
    if (this.closed) return noAnswerOutcome(SMS_GATEWAY_ERROR_OUTCOMES, { kind: 'aborted', code: 'closed' });
    // Our own sender, whatever the payload says: after a failover this backend's number is the one
    // its account may send from (and the one a reply or STOP reaches this backend's webhook at).
    const form = new URLSearchParams({ To: payload.to, From: this.fromNumber, Body: payload.body });
    if (this.statusCallbackUrl !== undefined) form.set('StatusCallback', this.statusCallbackUrl);
    const body = form.toString();
    const result = await boundedRequest({
      method: 'POST',
      url: this.messagesUrl,
      headers: {
        authorization: this.authorization,
        'content-type': 'application/x-www-form-urlencoded',
        'content-length': String(Buffer.byteLength(body)),
        accept: 'application/json',
      },
      body,
      agent: this.agent,
      timeoutMs: this.config.timeout_ms,
      signal: ctx.signal,
    });
    const outcome =
      'status' in result
        ? classifySmsGatewayAnswer(result, this.secrets())
        : noAnswerOutcome(SMS_GATEWAY_ERROR_OUTCOMES, result);
    if (outcome.class !== 'sent') {
      this.log.warn(
        {
          deliveryId: ctx.deliveryId,
          attempt: ctx.attempt,
          outcome: outcome.class,
          code: outcome.providerCode,
        },
        'sms_gateway send failed',
      );
    }
    return outcome;
  }

  /**
   * Fetches the account resource with the backend's credentials: healthy for any answer but 401/403
   * (the API is reachable and does not refuse us), degraded for those and for no answer at all.
   * Concurrent probes share one request.
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

  private secrets(): string[] {
    return [this.config.auth_token, this.authorization.slice('Basic '.length)];
  }

  private async probe(): Promise<BackendHealthResult> {
    const started = performance.now();
    const result = await boundedRequest({
      method: 'GET',
      url: this.accountUrl,
      headers: { authorization: this.authorization, accept: 'application/json' },
      agent: this.agent,
      timeoutMs: Math.min(this.config.timeout_ms, SMS_GATEWAY_PROBE_TIMEOUT_MS),
    });
    const details = {
      backend: this.name,
      driver: this.driver,
      latency_ms: Math.round(performance.now() - started),
    };
    if ('status' in result) {
      if (result.status === 401 || result.status === 403) {
        return {
          status: 'degraded',
          details,
          message: `SMS API refused the credentials (HTTP ${result.status})`,
        };
      }
      return { status: 'healthy', details };
    }
    return {
      status: 'degraded',
      details,
      message: `SMS API check failed: ${noAnswerOutcome(SMS_GATEWAY_ERROR_OUTCOMES, result).reason}`,
    };
  }
}
