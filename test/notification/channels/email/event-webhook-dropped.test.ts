/**
 * SendGrid `dropped` events: the recipient's reasons (an address that bounced, unsubscribed or
 * complained before, an invalid one) are recorded as the recipient's failure, so they do not burn
 * the receipts SLO; other reasons stay the provider's.
 */
import { parseEvent } from '../../../../services/notification/channels/email/event-webhook';
import { RECEIPT_PROVIDER_FAILURES } from '../../../../services/notification/monitor/default-slos';

const dropped = (reason?: unknown) =>
  parseEvent({ event: 'dropped', sg_event_id: 'e1', sg_message_id: 'm1.filter', timestamp: 1, reason });

describe('SendGrid dropped events', () => {
  it.each([
    ['Bounced Address', 'recipient_bounced'],
    ['Unsubscribed Address', 'recipient_unsubscribed'],
    ['Spam Reporting Address', 'recipient_unsubscribed'],
    ['Invalid', 'recipient_invalid'],
  ])('%s is the recipient’s failure, not the provider’s', (reason, failure) => {
    const verified = dropped(reason)!;
    expect(verified.receipt).toMatchObject({ status: 'undelivered', failure });
    expect(RECEIPT_PROVIDER_FAILURES.has(verified.receipt.failure!)).toBe(false);
  });

  it.each([['Spam Content (if spam checker app enabled)'], ['Invalid SMTPAPI header'], [undefined], [42]])(
    'reason %p stays the provider’s',
    (reason) => {
      const verified = dropped(reason)!;
      expect(verified.receipt).toMatchObject({ status: 'undelivered', failure: 'provider_undelivered' });
      expect(RECEIPT_PROVIDER_FAILURES.has('provider_undelivered')).toBe(true);
    },
  );
});
