/**
 * The sms_gateway outcome table row by row, with answers recorded from the Twilio Messages API.
 */
import {
  classifySmsGatewayAnswer,
  SMS_GATEWAY_STATUS_OUTCOMES,
  smsGatewayStatusRow,
} from '../../../../services/notification/channels/sms/sms-gateway-outcomes';

const SID = 'SM3fa5d1b0c2a64f0c9a8f4e21e6c1a9d7';
/** A message resource as Twilio answers 201 Created. */
const CREATED = JSON.stringify({
  account_sid: 'AC0123456789abcdef0123456789abcdef',
  api_version: '2010-04-01',
  body: 'Your code is 123456',
  date_created: 'Thu, 24 Aug 2023 05:01:45 +0000',
  date_sent: null,
  direction: 'outbound-api',
  error_code: null,
  error_message: null,
  from: '+15550001111',
  num_segments: '1',
  price: null,
  sid: SID,
  status: 'queued',
  to: '+15551234567',
  uri: `/2010-04-01/Accounts/AC0123456789abcdef0123456789abcdef/Messages/${SID}.json`,
});

function twilioError(code: number, message: string, status: number): string {
  return JSON.stringify({ code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status });
}

describe('the sms_gateway outcome table', () => {
  it.each([
    // [status, body, class, providerCode, reason fragment]
    [201, CREATED, 'sent', '201', undefined],
    [200, CREATED, 'sent', '200', undefined],
    [
      400,
      twilioError(21211, "The 'To' number +1555123 is not a valid phone number.", 400),
      'recipient_failure',
      '21211',
      "invalid recipient number (HTTP 400 code 21211): The 'To' number +1555123 is not a valid phone number.",
    ],
    [
      400,
      twilioError(21610, 'Attempt to send to unsubscribed recipient', 400),
      'recipient_failure',
      '21610',
      'recipient unsubscribed (STOP) (HTTP 400 code 21610)',
    ],
    [
      400,
      twilioError(21614, "'To' number is not a valid mobile number", 400),
      'recipient_failure',
      '21614',
      'not a mobile',
    ],
    [
      400,
      twilioError(21612, "The 'To' phone number is not currently reachable via SMS", 400),
      'recipient_failure',
      '21612',
      'not reachable',
    ],
    [
      400,
      twilioError(
        21408,
        "Permission to send an SMS has not been enabled for the region indicated by the 'To' number",
        400,
      ),
      'permanent',
      '21408',
      'request refused (HTTP 400 code 21408): Permission',
    ],
    [
      400,
      twilioError(21606, "The 'From' phone number provided is not a valid message-capable phone number", 400),
      'permanent',
      '21606',
      'From',
    ],
    [
      401,
      JSON.stringify({
        code: 20003,
        detail: 'Your AccountSid or AuthToken was incorrect.',
        message: 'Authenticate',
        status: 401,
      }),
      'permanent',
      '20003',
      'credentials refused',
    ],
    [
      403,
      twilioError(20008, 'Resource not accessible with Test Account Credentials', 403),
      'permanent',
      '20008',
      'not allowed',
    ],
    [
      404,
      twilioError(20404, 'The requested resource /2010-04-01/Accounts/AC1/Messages.json was not found', 404),
      'permanent',
      '20404',
      'check base_url',
    ],
    [408, '', 'retryable', '408', 'request timeout'],
    [
      429,
      twilioError(20429, 'Too Many Requests', 429),
      'rate_limited',
      '20429',
      'rate limited (HTTP 429 code 20429): Too Many Requests',
    ],
    [413, '', 'permanent', '413', 'request refused'],
    [
      500,
      twilioError(20500, 'An internal server error has occurred', 500),
      'retryable',
      '20500',
      'provider error',
    ],
    [503, twilioError(20503, 'Service unavailable', 503), 'retryable', '20503', 'provider error'],
    [502, '<html>Bad Gateway</html>', 'retryable', '502', 'provider error (HTTP 502)'],
    [302, '', 'permanent', '302', 'unexpected redirect'],
  ] as const)('HTTP %i %s classifies as %s', (status, body, cls, code, reason) => {
    const outcome = classifySmsGatewayAnswer({ status, headers: {}, body });
    expect(outcome.class).toBe(cls);
    expect(outcome.providerCode).toBe(code);
    if (cls === 'sent') {
      expect(outcome.providerReference).toBe(status === 201 || status === 200 ? SID : undefined);
      expect(outcome.reason).toBeUndefined();
    } else {
      expect(outcome.reason).toContain(reason);
    }
  });

  it('every row of the table is reachable: each is the first match of its own status and code', () => {
    for (const row of SMS_GATEWAY_STATUS_OUTCOMES) {
      const status =
        typeof row.status === 'number'
          ? row.status
          : Number(row.status[0]) * 100 + (row.status === '4xx' ? 22 : 99);
      expect(smsGatewayStatusRow(status, row.codes?.[0])).toBe(row);
    }
  });

  it('a recipient code only decides with a 4xx status: 21211 on a 500 is still a retryable provider error', () => {
    const outcome = classifySmsGatewayAnswer({
      status: 500,
      headers: {},
      body: twilioError(21211, 'x', 500),
    });
    expect(outcome.class).toBe('retryable');
  });

  it('honours Retry-After in seconds on 429 and on 503', () => {
    const limited = classifySmsGatewayAnswer({
      status: 429,
      headers: { 'retry-after': '3' },
      body: twilioError(20429, 'Too Many Requests', 429),
    });
    expect(limited).toMatchObject({ class: 'rate_limited', retryAfterMs: 3000 });
    const unavailable = classifySmsGatewayAnswer({ status: 503, headers: { 'retry-after': '1' }, body: '' });
    expect(unavailable).toMatchObject({ class: 'retryable', retryAfterMs: 1000 });
  });

  it('honours Retry-After given as an HTTP date, relative to when the answer arrived', () => {
    const receivedAt = Date.parse('Mon, 23 Nov 2026 10:00:00 GMT');
    const outcome = classifySmsGatewayAnswer({
      status: 429,
      headers: { 'retry-after': 'Mon, 23 Nov 2026 10:00:07 GMT' },
      body: '',
      receivedAt,
    });
    expect(outcome.retryAfterMs).toBe(7000);
  });

  it('never asks for a delay on a permanent failure', () => {
    const outcome = classifySmsGatewayAnswer({
      status: 400,
      headers: { 'retry-after': '5' },
      body: twilioError(21211, 'bad', 400),
    });
    expect(outcome.retryAfterMs).toBeUndefined();
  });

  it('scrubs the auth token from provider text and folds control characters', () => {
    const outcome = classifySmsGatewayAnswer(
      { status: 400, headers: {}, body: twilioError(21602, 'echo: token s3cr3t-token\r\nBody missing', 400) },
      ['s3cr3t-token'],
    );
    expect(outcome.reason).toContain('[REDACTED]');
    expect(outcome.reason).not.toContain('s3cr3t-token');
    expect(outcome.reason).not.toMatch(/[\r\n]/);
  });

  it('a cut or non-JSON body is classified by its status alone', () => {
    expect(classifySmsGatewayAnswer({ status: 400, headers: {}, body: '{"code": 212' })).toMatchObject({
      class: 'permanent',
      providerCode: '400',
    });
    expect(classifySmsGatewayAnswer({ status: 201, headers: {}, body: 'OK' })).toEqual({
      class: 'sent',
      providerCode: '201',
    });
  });

  it('reads a code a gateway sends as a string', () => {
    const outcome = classifySmsGatewayAnswer({
      status: 400,
      headers: {},
      body: JSON.stringify({ code: '21211', message: 'invalid' }),
    });
    expect(outcome).toMatchObject({ class: 'recipient_failure', providerCode: '21211' });
  });
});
