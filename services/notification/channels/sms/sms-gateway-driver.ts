/**
 * The `sms_gateway` driver: a Twilio-compatible Messages API (form `POST
 * {base_url}/2010-04-01/Accounts/{account_sid}/Messages.json`, HTTP Basic `account_sid:auth_token`,
 * fields To, From, Body), over node:http(s) with a keep-alive agent capped at `max_connections`. The
 * answer is classified from sms-gateway-outcomes.ts. The auth token goes into the Authorization header
 * and nowhere else: not into reasons, logs or errors.
 */
import type { Logger } from '../../../../shared/logging/logger';
import type { DriverSendContext, SendOutcome } from '../../delivery/driver';
import type { HttpAnswer } from '../http-request';
import { REST_PROBE_TIMEOUT_MS, RestDriver, type RestRequest } from '../rest-driver';
import type { SmsGatewayDriverConfig } from './config';
import type { SmsDriver } from './sms-driver';
import { classifySmsGatewayAnswer, SMS_GATEWAY_ERROR_OUTCOMES } from './sms-gateway-outcomes';
import { type SmsPayload, smsPayloadProblem } from './sms-message';

/** The longest a health probe may take (the REST drivers' one bound). */
export const SMS_GATEWAY_PROBE_TIMEOUT_MS = REST_PROBE_TIMEOUT_MS;

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

/** The `sms_gateway` driver of one named backend (the REST skeleton is `RestDriver`'s). */
export class SmsGatewayDriver extends RestDriver<SmsPayload> implements SmsDriver {
  readonly channel = 'sms' as const;
  readonly fromNumber: string;
  protected readonly apiName = 'SMS API';
  private readonly config: SmsGatewayDriverConfig;
  private readonly messagesUrl: URL;
  private readonly accountUrl: URL;
  private readonly authorization: string;
  private readonly statusCallbackUrl: string | undefined;

  constructor(opts: SmsGatewayDriverOptions) {
    super({
      name: opts.name,
      driver: 'sms_gateway',
      component: 'sms-gateway-driver',
      baseUrl: opts.config.base_url,
      maxConnections: opts.config.max_connections,
      timeoutMs: opts.config.timeout_ms,
      noAnswer: SMS_GATEWAY_ERROR_OUTCOMES,
      logger: opts.logger,
    });
    this.config = opts.config;
    this.fromNumber = opts.config.from_number;
    const account = `2010-04-01/Accounts/${encodeURIComponent(opts.config.account_sid)}`;
    this.messagesUrl = new URL(`${account}/Messages.json`, this.base);
    this.accountUrl = new URL(`${account}.json`, this.base);
    this.statusCallbackUrl = opts.statusCallbackUrl;
    this.authorization = `Basic ${Buffer.from(`${opts.config.account_sid}:${opts.config.auth_token}`).toString('base64')}`;
  }

  protected malformed(payload: SmsPayload): string | undefined {
    const problem = smsPayloadProblem(payload);
    return problem === undefined ? undefined : `malformed SMS payload: ${problem}`;
  }

  /** A form `POST` of To, From and Body (and StatusCallback), HTTP Basic. */
  protected sendRequest(payload: SmsPayload, _ctx: DriverSendContext): RestRequest {
    // Our own sender, whatever the payload says: after a failover this backend's number is the one
    // its account may send from (and the one a reply or STOP reaches this backend's webhook at).
    const form = new URLSearchParams({ To: payload.to, From: this.fromNumber, Body: payload.body });
    if (this.statusCallbackUrl !== undefined) form.set('StatusCallback', this.statusCallbackUrl);
    const body = form.toString();
    return {
      method: 'POST',
      url: this.messagesUrl,
      headers: {
        authorization: this.authorization,
        'content-type': 'application/x-www-form-urlencoded',
        'content-length': String(Buffer.byteLength(body)),
        accept: 'application/json',
      },
      body,
    };
  }

  protected classify(answer: HttpAnswer): SendOutcome {
    return classifySmsGatewayAnswer(answer, [
      this.config.auth_token,
      this.authorization.slice('Basic '.length),
    ]);
  }

  /**
   * Fetches the account resource with the backend's credentials: healthy for any answer but 401/403
   * (the API is reachable and does not refuse us), degraded for those and for no answer at all.
   */
  protected probeRequest(): Omit<RestRequest, 'method' | 'body'> {
    return {
      url: this.accountUrl,
      headers: { authorization: this.authorization, accept: 'application/json' },
    };
  }

  protected override answerProblem(answer: HttpAnswer): string | undefined {
    return answer.status === 401 || answer.status === 403
      ? `SMS API refused the credentials (HTTP ${answer.status})`
      : undefined;
  }
}
