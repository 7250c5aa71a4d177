/**
 * The outcome-table rows that put a recipient on the suppression list (SMS 21610, FCM UNREGISTERED /
 * NotRegistered, APNs 410 and BadDeviceToken) say so in their outcome, with a failure kind; the rows
 * next to them that must not (a bare FCM 404, an invalid SMS number) do not.
 */
import { classifyApnsAnswer } from '../../../services/notification/channels/push/apns-outcomes';
import {
  classifyFcmLegacyResult,
  classifyFcmV1Answer,
} from '../../../services/notification/channels/push/fcm-outcomes';
import { classifySmsGatewayAnswer } from '../../../services/notification/channels/sms/sms-gateway-outcomes';

const twilio = (code: number) => ({
  status: 400,
  headers: {},
  body: JSON.stringify({ code, message: 'refused', status: 400 }),
});
const fcm = (status: number, errorCode?: string) =>
  JSON.stringify({
    error: {
      code: status,
      message: 'm',
      status: 'NOT_FOUND',
      details: errorCode
        ? [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode }]
        : [],
    },
  });

describe('outcome rows that suppress a recipient', () => {
  it.each([
    ['SMS 21610', classifySmsGatewayAnswer(twilio(21610)), 'recipient_unsubscribed', 'unsubscribed'],
    [
      'FCM v1 UNREGISTERED',
      classifyFcmV1Answer(404, fcm(404, 'UNREGISTERED')),
      'recipient_unregistered',
      'unregistered_token',
    ],
    [
      'FCM legacy NotRegistered',
      classifyFcmLegacyResult({ error: 'NotRegistered' }),
      'recipient_unregistered',
      'unregistered_token',
    ],
    [
      'APNs 410',
      classifyApnsAnswer(410, '{"reason":"Unregistered"}', undefined),
      'recipient_unregistered',
      'unregistered_token',
    ],
    [
      'APNs 400 BadDeviceToken',
      classifyApnsAnswer(400, '{"reason":"BadDeviceToken"}', undefined),
      'recipient_invalid',
      'invalid_recipient',
    ],
  ])('%s is a recipient failure that suppresses', (_name, outcome, failure, suppress) => {
    expect(outcome).toMatchObject({ class: 'recipient_failure', failure, suppress });
  });

  it.each([
    ['SMS 21211 (invalid number)', classifySmsGatewayAnswer(twilio(21211))],
    // A bare 404 may be a wrong base_url: suppressing every token on it would be a disaster.
    ['FCM v1 bare 404', classifyFcmV1Answer(404, fcm(404))],
    [
      'APNs 400 DeviceTokenNotForTopic',
      classifyApnsAnswer(400, '{"reason":"DeviceTokenNotForTopic"}', undefined),
    ],
  ])('%s does not suppress', (_name, outcome) => {
    expect(outcome.class).toBe('recipient_failure');
    expect(outcome.suppress).toBeUndefined();
  });
});
