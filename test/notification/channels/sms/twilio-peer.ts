/**
 * A local HTTP/1.1 server speaking the Twilio Messages API for the SMS tests: it checks HTTP Basic
 * auth (401 code 20003, as Twilio answers, for wrong credentials) and the form fields To, From and
 * Body (400 with Twilio's codes when one is missing), records every request, and answers from a
 * script (201 with a message resource and a new `sid` by default). `GET .../Accounts/{sid}.json`
 * answers the account resource (the driver's health probe).
 */
import { createHmac } from 'node:crypto';
import http from 'node:http';
import { serveStandIn } from '../../../support/stand-in-server';

/** The credentials the peer accepts. */
export const ACCOUNT_SID = 'AC0123456789abcdef0123456789abcdef';
export const AUTH_TOKEN = 'auth-token-0123456789abcdef-secret';

/** One Messages request the peer received (after its auth and form checks passed). */
export interface TwilioRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  form: Record<string, string>;
  /** The client's port: one value for requests on one keep-alive connection. */
  remotePort: number;
}

/** How the peer answers the next accepted Messages request. */
export type TwilioAnswer =
  { kind: 'answer'; status: number; headers?: Record<string, string>; body?: unknown } | { kind: 'hang' };

/** A running peer. */
export interface TwilioPeer {
  baseUrl: string;
  /** Accepted Messages requests, in arrival order. */
  requests: TwilioRequest[];
  /** Messages requests that passed the auth and form checks (counted even when not recorded). */
  accepted: number;
  /** Messages requests refused by the auth or form check. */
  refused: number;
  script: TwilioAnswer[];
  /**
   * Consulted first for every accepted Messages request: its answer, or undefined for the script's
   * (or the default 201). A test hook for answers that depend on the message.
   */
  onMessage?: (form: Record<string, string>) => TwilioAnswer | undefined;
  close(): Promise<void>;
}

/** A Twilio error body, as the API sends it. */
export function twilioError(status: number, code: number, message: string): TwilioAnswer {
  return {
    kind: 'answer',
    status,
    body: { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status },
  };
}

/** Starts a peer on 127.0.0.1 and a free port. */
export async function startTwilioPeer(opts: { record?: boolean } = {}): Promise<TwilioPeer> {
  const record = opts.record ?? true;
  let nextId = 1;
  const expectedAuth = `Basic ${Buffer.from(`${ACCOUNT_SID}:${AUTH_TOKEN}`).toString('base64')}`;
  const messagesPath = `/2010-04-01/Accounts/${ACCOUNT_SID}/Messages.json`;
  const peer: TwilioPeer = {
    baseUrl: '',
    requests: [],
    accepted: 0,
    refused: 0,
    script: [],
    close: async () => undefined,
  };
  const reply = (
    res: http.ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
  ) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(typeof body === 'string' ? body : JSON.stringify(body));
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.headers.authorization !== expectedAuth) {
        peer.refused++;
        return reply(res, 401, {
          code: 20003,
          detail: 'Your AccountSid or AuthToken was incorrect.',
          message: 'Authenticate',
          more_info: 'https://www.twilio.com/docs/errors/20003',
          status: 401,
        });
      }
      if (req.method === 'GET' && req.url === `/2010-04-01/Accounts/${ACCOUNT_SID}.json`) {
        return reply(res, 200, { sid: ACCOUNT_SID, status: 'active' });
      }
      if (req.method !== 'POST' || req.url !== messagesPath) {
        peer.refused++;
        return reply(res, 404, {
          code: 20404,
          message: `The requested resource ${req.url} was not found`,
          status: 404,
        });
      }
      const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
      const missing = !form.To
        ? [21604, "A 'To' phone number is required."]
        : !form.From
          ? [21603, "A 'From' phone number is required."]
          : !form.Body
            ? [21602, 'Message body is required.']
            : undefined;
      if (req.headers['content-type'] !== 'application/x-www-form-urlencoded' || missing) {
        peer.refused++;
        const [code, message] = missing ?? [21602, 'Message body is required.'];
        return reply(res, 400, { code, message, status: 400 });
      }
      peer.accepted++;
      if (record)
        peer.requests.push({
          method: req.method,
          path: req.url,
          headers: req.headers,
          form,
          remotePort: req.socket.remotePort ?? 0,
        });
      const sid = `SM${String(nextId++).padStart(32, '0')}`;
      const answer = peer.onMessage?.(form) ??
        peer.script.shift() ?? {
          kind: 'answer',
          status: 201,
          body: {
            account_sid: ACCOUNT_SID,
            api_version: '2010-04-01',
            body: form.Body,
            direction: 'outbound-api',
            error_code: null,
            error_message: null,
            from: form.From,
            num_segments: '1',
            sid,
            status: 'queued',
            to: form.To,
            uri: `/2010-04-01/Accounts/${ACCOUNT_SID}/Messages/${sid}.json`,
          },
        };
      if (answer.kind === 'hang') return; // never answers; the client's timeout must end it
      reply(res, answer.status, answer.body ?? '', answer.headers);
    });
  });
  server.keepAliveTimeout = 30_000;
  const served = await serveStandIn(server);
  peer.baseUrl = served.baseUrl;
  peer.close = served.close;
  return peer;
}

/** sms_gateway settings for `peer` (the peer's credentials unless overridden), short timeouts. */
export function gatewayConfig(
  peer: Pick<TwilioPeer, 'baseUrl'>,
  extra: Record<string, unknown> = {},
): { account_sid: string; auth_token: string; from_number: string; base_url: string; timeout_ms: number } {
  return {
    account_sid: ACCOUNT_SID,
    auth_token: AUTH_TOKEN,
    from_number: '+15550001111',
    base_url: peer.baseUrl,
    timeout_ms: 2000,
    ...extra,
  };
}

/** What the stand-in's status callback or inbound message answered. */
export interface CallbackAnswer {
  status: number;
  body: string;
}

/**
 * Posts a form to `url` as the provider does: signed with `X-Twilio-Signature` over `signedUrl` (the
 * public URL the provider was given; it differs from `url` behind a proxy) and the sorted fields.
 * `signature` replaces the computed one (forgeries); null sends none.
 */
export async function postSignedForm(
  url: string,
  signedUrl: string,
  form: Record<string, string>,
  opts: { authToken?: string; signature?: string | null } = {},
): Promise<CallbackAnswer> {
  const pairs = Object.entries(form).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const hmac = createHmac('sha1', opts.authToken ?? AUTH_TOKEN).update(signedUrl);
  for (const [k, v] of pairs) hmac.update(k + v);
  const signature = opts.signature === undefined ? hmac.digest('base64') : opts.signature;
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (signature !== null) headers['x-twilio-signature'] = signature;
  const res = await fetch(url, { method: 'POST', headers, body: new URLSearchParams(form).toString() });
  return { status: res.status, body: await res.text() };
}

/**
 * The provider's status callback for a message the peer accepted: posted to the `StatusCallback`
 * the driver sent with it, whose origin is replaced by `reachAt` (the service's real address; the
 * signature still covers the public URL, as behind a reverse proxy).
 */
export async function sendStatusCallback(
  request: TwilioRequest,
  sid: string,
  messageStatus: string,
  reachAt: string,
  opts: { errorCode?: string; signature?: string | null } = {},
): Promise<CallbackAnswer> {
  const callback = request.form.StatusCallback;
  if (!callback) throw new Error('the message asked for no status callback');
  const form: Record<string, string> = {
    AccountSid: ACCOUNT_SID,
    MessageSid: sid,
    SmsSid: sid,
    MessageStatus: messageStatus,
    SmsStatus: messageStatus,
    To: request.form.To ?? '',
    From: request.form.From ?? '',
    ApiVersion: '2010-04-01',
  };
  if (opts.errorCode) form.ErrorCode = opts.errorCode;
  const target = reachAt + new URL(callback).pathname;
  return postSignedForm(target, callback, form, { signature: opts.signature });
}
