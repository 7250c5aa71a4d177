/**
 * The signature checks against vectors published by the providers' own SDKs, copied verbatim:
 * - twilio/twilio-node spec/validation.spec.js (commit 45d3d65a4ea87652f4c7973af0e0998f3af31322):
 *   token "12345", the documented example URL and form, signature "RSOYDt4T1cUTdK1PDd93/VVr8B8=".
 * - sendgrid/sendgrid-nodejs packages/eventwebhook/src/eventwebhook.spec.js (commit
 *   498e2329e87d804d83f4a7b519d33fa09198d0ca): a single-event and a multi-event batch with their
 *   P-256 keys, timestamps and signatures.
 */
import {
  eventWebhookKey,
  verifyEventWebhookSignature,
} from '../../../services/notification/channels/email/event-webhook';
import {
  twilioSignature,
  verifyTwilioSignature,
} from '../../../services/notification/channels/sms/sms-webhooks';

describe('Twilio request signature (twilio-node published vector)', () => {
  const token = '12345';
  const url = 'https://mycompany.com/myapp.php?foo=1&bar=2';
  const params = Object.entries({
    CallSid: 'CA1234567890ABCDE',
    Caller: '+14158675309',
    Digits: '1234',
    From: '+14158675309',
    To: '+18005551212',
  });

  it('computes the published signature for the published URL and form', () => {
    expect(twilioSignature(token, url, params)).toBe('RSOYDt4T1cUTdK1PDd93/VVr8B8=');
  });

  it('accepts the published signature whatever order the fields arrive in', () => {
    expect(verifyTwilioSignature(token, url, [...params].reverse(), 'RSOYDt4T1cUTdK1PDd93/VVr8B8=')).toBe(
      true,
    );
  });

  it('refuses it for another token, another URL, a changed field, or no signature', () => {
    const sig = 'RSOYDt4T1cUTdK1PDd93/VVr8B8=';
    expect(verifyTwilioSignature('12346', url, params, sig)).toBe(false);
    expect(verifyTwilioSignature(token, url.replace('bar=2', 'bar=3'), params, sig)).toBe(false);
    const changed = params.map(([k, v]) => [k, k === 'Digits' ? '1235' : v] as [string, string]);
    expect(verifyTwilioSignature(token, url, changed, sig)).toBe(false);
    expect(verifyTwilioSignature(token, url, params, undefined)).toBe(false);
    expect(verifyTwilioSignature(token, url, params, '')).toBe(false);
  });
});

describe('SendGrid signed event webhook (sendgrid-nodejs published vectors)', () => {
  const PUBLIC_KEY =
    'MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE83T4O/n84iotIvIW4mdBgQ/7dAfSmpqIM8kF9mN1flpVKS3GRqe62gw+2fNNRaINXvVpiglSI8eNEc6wEA3F+g==';
  const SIGNATURE =
    'MEUCIGHQVtGj+Y3LkG9fLcxf3qfI10QysgDWmMOVmxG0u6ZUAiEAyBiXDWzM+uOe5W0JuG+luQAbPIqHh89M15TluLtEZtM=';
  const TIMESTAMP = '1600112502';
  const PAYLOAD =
    JSON.stringify([
      {
        email: 'hello@world.com',
        event: 'dropped',
        reason: 'Bounced Address',
        sg_event_id: 'ZHJvcC0xMDk5NDkxOS1MUnpYbF9OSFN0T0doUTRrb2ZTbV9BLTA',
        sg_message_id: 'LRzXl_NHStOGhQ4kofSm_A.filterdrecv-p3mdw1-756b745b58-kmzbl-18-5F5FC76C-9.0',
        'smtp-id': '<LRzXl_NHStOGhQ4kofSm_A@ismtpd0039p1iad1.sendgrid.net>',
        timestamp: 1600112492,
      },
    ]) + '\r\n';

  const PUBLIC_KEY_MULTIPLE =
    'MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEQ4LIFtWztlsF7skFqOncjD1lun4H5w8XOhyOArHW9RcIx/FfEzx6cikC/yPfUvwaX/JScE7Fc9CJD2afQ9Ok3Q==';
  const SIGNATURE_MULTIPLE =
    'MEYCIQC/I4o6vCgqRYrTljjoVWB/GRWNtxeePlLMHr3x9ETeRQIhAIpV+03nREPTTHWSW0wIOA0EoMPdcNgXa70yCaqDJlu5';
  const TIMESTAMP_MULTIPLE = '1619651159';
  const PAYLOAD_MULTIPLE =
    JSON.stringify([
      {
        email: 'invalid@gmail.com',
        event: 'processed',
        send_at: 0,
        sg_event_id: 'cHJvY2Vzc2VkLTE5OTQyMTEyLXFOd0JMZ1BRUWpXNkRKdktRd1NBYnctMA',
        sg_message_id: 'qNwBLgPQQjW6DJvKQwSAbw.filterdrecv-canary-547b64655b-cw6zx-1-6089EA4A-56.0',
        'smtp-id': '<qNwBLgPQQjW6DJvKQwSAbw@ismtpd0178p1mdw1.sendgrid.net>',
        timestamp: 1619651146,
      },
      {
        email: 'invalid@gmail.com',
        event: 'bounce',
        ip: '167.89.101.76',
        reason:
          '552 5.2.2 The email account that you tried to reach is over quota and inactive. Please direct the recipient to https://support.google.com/mail/?p=OverQuotaPerm c17si1130468pgv.34 - gsmtp',
        sg_event_id: 'Ym91bmNlLTAtMTk5NDIxMTItcU53QkxnUFFRalc2REp2S1F3U0Fidy0w',
        sg_message_id: 'qNwBLgPQQjW6DJvKQwSAbw.filterdrecv-canary-547b64655b-cw6zx-1-6089EA4A-56.0',
        'smtp-id': '<qNwBLgPQQjW6DJvKQwSAbw@ismtpd0178p1mdw1.sendgrid.net>',
        status: '5.2.2',
        timestamp: 1619651147,
        tls: 1,
        type: 'blocked',
      },
    ])
      .split('},{')
      .join('},\r\n{') + '\r\n';

  it('verifies the published single-event batch', () => {
    expect(
      verifyEventWebhookSignature(eventWebhookKey(PUBLIC_KEY), TIMESTAMP, Buffer.from(PAYLOAD), SIGNATURE),
    ).toBe(true);
  });

  it('verifies the published multi-event batch', () => {
    expect(
      verifyEventWebhookSignature(
        eventWebhookKey(PUBLIC_KEY_MULTIPLE),
        TIMESTAMP_MULTIPLE,
        Buffer.from(PAYLOAD_MULTIPLE),
        SIGNATURE_MULTIPLE,
      ),
    ).toBe(true);
  });

  it('refuses the published signature with another key, a changed body, another timestamp or garbage', () => {
    const key = eventWebhookKey(PUBLIC_KEY);
    expect(
      verifyEventWebhookSignature(
        eventWebhookKey(PUBLIC_KEY_MULTIPLE),
        TIMESTAMP,
        Buffer.from(PAYLOAD),
        SIGNATURE,
      ),
    ).toBe(false);
    expect(
      verifyEventWebhookSignature(
        key,
        TIMESTAMP,
        Buffer.from(PAYLOAD.replace('dropped', 'delivered')),
        SIGNATURE,
      ),
    ).toBe(false);
    expect(verifyEventWebhookSignature(key, '1600112503', Buffer.from(PAYLOAD), SIGNATURE)).toBe(false);
    expect(verifyEventWebhookSignature(key, TIMESTAMP, Buffer.from(PAYLOAD), 'bm90IGEgc2lnbmF0dXJl')).toBe(
      false,
    );
    expect(verifyEventWebhookSignature(key, TIMESTAMP, Buffer.from(PAYLOAD), '')).toBe(false);
  });
});
