/**
 * The push outcome tables, row by row, with answers as APNs and FCM give them (bodies recorded from
 * the providers' documentation), and a check that every row is exercised.
 */
import {
  APNS_OUTCOMES,
  apnsReason,
  apnsRow,
  classifyApnsAnswer,
} from '../../../../services/notification/channels/push/apns-outcomes';
import {
  classifyFcmLegacyResult,
  classifyFcmLegacyStatus,
  classifyFcmV1Answer,
  FCM_LEGACY_RESULT_OUTCOMES,
  FCM_V1_OUTCOMES,
  fcmV1Row,
  parseV1Error,
} from '../../../../services/notification/channels/push/fcm-outcomes';
import type { OutcomeClass } from '../../../../services/notification/delivery/driver';

const APNS: [number, string, OutcomeClass][] = [
  [200, '', 'sent'],
  [410, '{"reason":"Unregistered","timestamp":1700000000000}', 'recipient_failure'],
  [410, '{"reason":"ExpiredToken"}', 'recipient_failure'],
  [400, '{"reason":"BadDeviceToken"}', 'recipient_failure'],
  [400, '{"reason":"DeviceTokenNotForTopic"}', 'recipient_failure'],
  [400, '{"reason":"PayloadEmpty"}', 'permanent'],
  [403, '{"reason":"ExpiredProviderToken"}', 'retryable'],
  [403, '{"reason":"InvalidProviderToken"}', 'permanent'],
  [413, '{"reason":"PayloadTooLarge"}', 'permanent'],
  [429, '{"reason":"TooManyRequests"}', 'rate_limited'],
  [405, '{"reason":"MethodNotAllowed"}', 'permanent'],
  [500, '{"reason":"InternalServerError"}', 'retryable'],
  [503, '{"reason":"ServiceUnavailable"}', 'retryable'],
];

const fcmError = (code: number, status: string, message: string, errorCode?: string) =>
  JSON.stringify({
    error: {
      code,
      message,
      status,
      details: errorCode
        ? [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode }]
        : [],
    },
  });

const FCM_V1: [number, string, OutcomeClass][] = [
  [200, '{"name":"projects/p/messages/0:1500415314455276%31bd1c9631bd1c96"}', 'sent'],
  [404, fcmError(404, 'NOT_FOUND', 'Requested entity was not found.', 'UNREGISTERED'), 'recipient_failure'],
  [
    400,
    fcmError(
      400,
      'INVALID_ARGUMENT',
      'The registration token is not a valid FCM registration token',
      'INVALID_ARGUMENT',
    ),
    'recipient_failure',
  ],
  [403, fcmError(403, 'PERMISSION_DENIED', 'SenderId mismatch', 'SENDER_ID_MISMATCH'), 'permanent'],
  [
    401,
    fcmError(401, 'UNAUTHENTICATED', 'Auth error from APNS or Web Push Service', 'THIRD_PARTY_AUTH_ERROR'),
    'permanent',
  ],
  [429, fcmError(429, 'RESOURCE_EXHAUSTED', 'Quota exceeded', 'QUOTA_EXCEEDED'), 'rate_limited'],
  [503, fcmError(503, 'UNAVAILABLE', 'The service is currently unavailable.', 'UNAVAILABLE'), 'retryable'],
  [500, fcmError(500, 'INTERNAL', 'Internal error encountered.', 'INTERNAL'), 'retryable'],
  [
    400,
    fcmError(
      400,
      'INVALID_ARGUMENT',
      'Invalid JSON payload received. Unknown name "foo"',
      'INVALID_ARGUMENT',
    ),
    'permanent',
  ],
  [401, fcmError(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.'), 'permanent'],
  [403, fcmError(403, 'PERMISSION_DENIED', 'Permission denied'), 'permanent'],
  [404, '', 'recipient_failure'],
  [429, '', 'rate_limited'],
  [409, '', 'permanent'],
  [502, '<html>Bad Gateway</html>', 'retryable'],
];

describe('APNs outcome table', () => {
  it.each(APNS)('HTTP %i %s -> %s', (status, body, expected) => {
    const outcome = classifyApnsAnswer(status, body, 'apns-id-1');
    expect(outcome.class).toBe(expected);
    if (expected === 'sent') expect(outcome.providerReference).toBe('apns-id-1');
    else expect(outcome.reason).toContain(`HTTP ${status}`);
  });

  it('every row is exercised by a recorded answer', () => {
    const used = new Set(APNS.map(([s, b]) => apnsRow(s, apnsReason(b))));
    expect(APNS_OUTCOMES.filter((r) => !used.has(r))).toEqual([]);
  });
});

describe('FCM v1 outcome table', () => {
  it.each(FCM_V1)('HTTP %i %s -> %s', (status, body, expected) => {
    const outcome = classifyFcmV1Answer(status, body);
    expect(outcome.class).toBe(expected);
    if (expected === 'sent') expect(outcome.providerReference).toMatch(/^projects\/p\/messages\//);
  });

  it('every row is exercised by a recorded answer', () => {
    const used = new Set(FCM_V1.map(([s, b]) => fcmV1Row(s, parseV1Error(b))));
    expect(FCM_V1_OUTCOMES.filter((r) => !used.has(r))).toEqual([]);
  });

  it('takes the delay of a Retry-After on 429 and 5xx, in seconds or as an HTTP date', () => {
    const quota = classifyFcmV1Answer(429, fcmError(429, 'RESOURCE_EXHAUSTED', 'quota'), [], {
      'retry-after': '7',
    });
    expect([quota.class, quota.retryAfterMs]).toEqual(['rate_limited', 7000]);
    const at = new Date(Date.now() + 60_000).toUTCString();
    const busy = classifyFcmV1Answer(503, fcmError(503, 'UNAVAILABLE', 'busy'), [], { 'retry-after': at });
    expect(busy.class).toBe('retryable');
    expect(busy.retryAfterMs).toBeGreaterThan(50_000);
    expect(classifyFcmV1Answer(503, fcmError(503, 'UNAVAILABLE', 'busy')).retryAfterMs).toBeUndefined();
    // A permanent answer never carries a delay, whatever its headers say.
    const refused = classifyFcmV1Answer(400, fcmError(400, 'INVALID_ARGUMENT', 'bad'), [], {
      'retry-after': '7',
    });
    expect(refused.retryAfterMs).toBeUndefined();
  });

  it('scrubs secrets from provider text', () => {
    const outcome = classifyFcmV1Answer(400, fcmError(400, 'INVALID_ARGUMENT', 'bad token ya29.secret'), [
      'ya29.secret',
    ]);
    expect(outcome.reason).not.toContain('ya29.secret');
  });
});

describe('FCM legacy outcome table', () => {
  it.each(Object.entries(FCM_LEGACY_RESULT_OUTCOMES))('error %s -> %j', (error, row) => {
    expect(classifyFcmLegacyResult({ error })).toMatchObject({ class: row.class, providerCode: error });
  });

  it('a message_id is sent, an unknown error permanent', () => {
    expect(classifyFcmLegacyResult({ message_id: '0:1' })).toEqual({
      class: 'sent',
      providerReference: '0:1',
    });
    expect(classifyFcmLegacyResult({ error: 'SomethingNew' }).class).toBe('permanent');
  });

  it.each([
    [401, 'permanent'],
    [400, 'permanent'],
    [429, 'rate_limited'],
    [500, 'retryable'],
    [503, 'retryable'],
  ] as const)('call status %i -> %s', (status, expected) => {
    expect(classifyFcmLegacyStatus(status).class).toBe(expected);
  });
});
