/**
 * The http_api outcome table, row by row, with answers as SendGrid gives them.
 */
import {
  classifyHttpApiAnswer,
  HTTP_API_STATUS_OUTCOMES,
  retryAfterMs,
} from '../../../../services/notification/channels/email/http-api-outcomes';
import type { OutcomeClass } from '../../../../services/notification/delivery/driver';

const errorsBody = (message: string, field: string | null = null) =>
  JSON.stringify({ errors: [{ message, field, help: null }] });

/** Recorded answers: [status, body, expected class, expected reason]. */
const ANSWERS: [number, string, OutcomeClass, string | undefined][] = [
  [202, '', 'sent', undefined],
  [200, '{}', 'sent', undefined],
  [
    400,
    errorsBody(
      'The subject is required. You can get around this requirement if you use a template with a subject defined or if every personalization has a subject defined.',
      'subject',
    ),
    'permanent',
    'request refused (HTTP 400): The subject is required. You can get around this requirement if you use a template with a subject defined or if every personalization has a subject defined.',
  ],
  [
    400,
    errorsBody('Does not contain a valid address.', 'personalizations.0.to.0.email'),
    'recipient_failure',
    'recipient refused (HTTP 400): Does not contain a valid address.',
  ],
  [
    400,
    errorsBody(
      'Each email address in the personalization block should be unique between to, cc, and bcc. We found the first duplicate instance of [jane@example.com] in the personalizations.0.bcc field.',
      'personalizations.0.bcc',
    ),
    'recipient_failure',
    'recipient refused (HTTP 400): Each email address in the personalization block should be unique between to, cc, and bcc. We found the first duplicate instance of [jane@example.com] in the personalizations.0.bcc field.',
  ],
  [
    401,
    errorsBody('The provided authorization grant is invalid, expired, or revoked'),
    'permanent',
    'API key missing or invalid (HTTP 401): The provided authorization grant is invalid, expired, or revoked',
  ],
  [
    403,
    errorsBody('The from address does not match a verified Sender Identity.', 'from'),
    'permanent',
    'API key not allowed to send (HTTP 403): The from address does not match a verified Sender Identity.',
  ],
  [404, '', 'permanent', 'no such endpoint (check base_url) (HTTP 404)'],
  [408, '', 'retryable', 'request timeout (HTTP 408)'],
  [413, errorsBody('too big'), 'permanent', 'message too large for the API (HTTP 413): too big'],
  [429, errorsBody('too many requests'), 'rate_limited', 'rate limited (HTTP 429): too many requests'],
  [422, 'not json', 'permanent', 'request refused (HTTP 422)'],
  [500, errorsBody('internal error'), 'retryable', 'provider error (HTTP 500): internal error'],
  [502, '<html>Bad Gateway</html>', 'retryable', 'provider error (HTTP 502)'],
  [503, '', 'retryable', 'provider error (HTTP 503)'],
  [301, '', 'permanent', 'unexpected redirect (check base_url) (HTTP 301)'],
];

describe('http_api outcome table', () => {
  it.each(ANSWERS)('HTTP %i %s -> %s', (status, body, expected, reason) => {
    const outcome = classifyHttpApiAnswer({ status, headers: { 'x-message-id': 'abc' }, body });

    expect(outcome.class).toBe(expected);
    expect(outcome.providerCode).toBe(String(status));
    expect(outcome.reason).toBe(reason);
    if (expected === 'sent') expect(outcome.providerReference).toBe('abc');
  });

  it('every status row is exercised by a recorded answer', () => {
    const covered = new Set(
      ANSWERS.map(([status, body]) => {
        const fields = body.startsWith('{')
          ? ((JSON.parse(body) as { errors?: { field?: string }[] }).errors ?? []).map((e) => e.field ?? '')
          : [];
        return HTTP_API_STATUS_OUTCOMES.find(
          (r) =>
            (typeof r.status === 'number'
              ? r.status === status
              : Math.floor(status / 100) === Number(r.status[0])) &&
            (!r.errorField || fields.some((f) => r.errorField!.test(f))),
        );
      }),
    );

    expect(HTTP_API_STATUS_OUTCOMES.filter((r) => !covered.has(r))).toEqual([]);
  });

  it('a 429 carries Retry-After in seconds as retryAfterMs', () => {
    const outcome = classifyHttpApiAnswer({ status: 429, headers: { 'retry-after': '12' }, body: '' });

    expect(outcome).toMatchObject({ class: 'rate_limited', retryAfterMs: 12_000 });
  });

  it('a 503 carries Retry-After as an HTTP date relative to when the answer arrived', () => {
    const receivedAt = Date.parse('2026-11-23T10:00:00Z');

    const outcome = classifyHttpApiAnswer({
      status: 503,
      headers: { 'retry-after': 'Mon, 23 Nov 2026 10:01:30 GMT' },
      body: '',
      receivedAt,
    });

    expect(outcome).toMatchObject({ class: 'retryable', retryAfterMs: 90_000 });
  });

  it('a permanent answer ignores Retry-After', () => {
    expect(
      classifyHttpApiAnswer({ status: 400, headers: { 'retry-after': '5' }, body: '' }).retryAfterMs,
    ).toBeUndefined();
  });

  describe('retryAfterMs', () => {
    const now = Date.parse('2026-11-23T10:00:00Z');

    it.each<[Record<string, string>, number | undefined]>([
      [{ 'retry-after': '0' }, 0],
      [{ 'retry-after': '120' }, 120_000],
      [{ 'retry-after': 'Mon, 23 Nov 2026 10:00:10 GMT' }, 10_000],
      [{ 'retry-after': 'Mon, 23 Nov 2026 09:00:00 GMT' }, 0],
      [{ 'retry-after': 'soon' }, undefined],
      [{ 'retry-after': '-5' }, undefined],
      [{ 'x-ratelimit-reset': String(now / 1000 + 45) }, 45_000],
      [{}, undefined],
    ])('%j -> %s', (headers, expected) => {
      expect(retryAfterMs(headers, now)).toBe(expected);
    });
  });

  it('scrubs the secrets it is given from provider text', () => {
    const outcome = classifyHttpApiAnswer(
      { status: 401, headers: {}, body: errorsBody('key SG.secret is bad') },
      ['SG.secret'],
    );

    expect(outcome.reason).toBe('API key missing or invalid (HTTP 401): key [REDACTED] is bad');
  });
});
