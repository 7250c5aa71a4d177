/**
 * The SMTP outcome table, row by row, with replies and failures as relays and nodemailer give them.
 */
import {
  classifySmtpFailure,
  SMTP_ERROR_OUTCOMES,
  SMTP_REPLY_OUTCOMES,
  type SmtpFailure,
  smtpReplyRow,
} from '../../../../services/notification/channels/email/smtp-outcomes';
import type { OutcomeClass } from '../../../../services/notification/delivery/driver';

/** Recorded replies: [reply text, expected class, meaning of the row that decides]. */
const REPLIES: [string, OutcomeClass, string][] = [
  [
    '421 4.7.0 mx.example.com Service not available, closing transmission channel',
    'retryable',
    'service not available, closing the connection',
  ],
  [
    '421-4.7.28 Our system has detected an unusual rate of unsolicited mail',
    'rate_limited',
    'rate limited by the receiver (Gmail)',
  ],
  [
    '451 4.7.650 The mail server has been temporarily rate limited due to IP reputation',
    'rate_limited',
    'rate limited by the receiver (Microsoft)',
  ],
  [
    '450 4.2.1 The user you are trying to contact is receiving mail at a rate that prevents additional messages',
    'rate_limited',
    'recipient receiving mail too fast',
  ],
  ['451 4.7.1 Try again later', 'retryable', 'transient failure'],
  [
    '450 4.1.8 <bounce@nowhere.example>: Sender address rejected: Domain not found',
    'retryable',
    'transient failure',
  ],
  ['452 4.5.3 Too many recipients', 'retryable', 'transient failure'],
  ['503 5.5.1 Error: need MAIL command', 'retryable', 'bad sequence of commands'],
  ['550 5.7.1 Relaying denied', 'permanent', 'refused by policy'],
  [
    '554 5.7.1 Service unavailable; Client host [192.0.2.1] blocked using zen.spamhaus.org',
    'permanent',
    'refused by policy',
  ],
  ['535 5.7.8 Error: authentication failed: authentication failure', 'permanent', 'refused by policy'],
  [
    '550 5.1.1 <jane@example.com>: Recipient address rejected: User unknown in virtual mailbox table',
    'recipient_failure',
    'mailbox unavailable',
  ],
  ['550 Requested action not taken: mailbox unavailable', 'recipient_failure', 'mailbox unavailable'],
  ['551 5.1.6 User not local; please try <jane@other.example>', 'recipient_failure', 'user not local'],
  ['553 5.1.3 Mailbox name not allowed', 'recipient_failure', 'mailbox name not allowed'],
  ['556 5.1.10 Recipient address has null MX', 'recipient_failure', 'bad destination address'],
  ['552 5.2.2 Mailbox full', 'recipient_failure', 'mailbox full'],
  ['552 5.3.4 Message size exceeds fixed limit', 'permanent', 'permanent failure'],
  ['554 5.6.0 Message rejected', 'permanent', 'permanent failure'],
];

describe('SMTP outcome table', () => {
  it.each(REPLIES)('%s -> %s', (response, expected, meaning) => {
    const code = Number(response.slice(0, 3));

    const outcome = classifySmtpFailure({ code: 'EMESSAGE', responseCode: code, response });

    expect(outcome.class).toBe(expected);
    expect(outcome.providerCode).toBe(String(code));
    expect(outcome.reason).toBe(`${meaning}: ${response}`);
  });

  it('decides a 250 as sent', () => {
    expect(smtpReplyRow(250, '250 2.0.0 Ok: queued as 4F2A1C0B3D')?.class).toBe('sent');
  });

  it.each(SMTP_ERROR_OUTCOMES.map((row) => [row.error, row.class, row.meaning, row.failure] as const))(
    'a failure without a reply, %s -> %s',
    (code, expected, meaning, failure) => {
      const outcome = classifySmtpFailure({ code });

      expect(outcome).toEqual({
        class: expected,
        reason: `${meaning} (${code})`,
        providerCode: code,
        ...(failure ? { failure } : {}),
      });
    },
  );

  it('names which wait timed out', () => {
    const failure: SmtpFailure = { code: 'ETIMEDOUT', timeoutType: 'GREETING_TIMEOUT' };

    expect(classifySmtpFailure(failure).reason).toBe('timed out (ETIMEDOUT, GREETING_TIMEOUT)');
  });

  it('retries what the table does not know', () => {
    expect(classifySmtpFailure({ code: 'ESOMETHINGNEW' }).class).toBe('retryable');
    expect(classifySmtpFailure({}).class).toBe('retryable');
  });

  it('folds control characters of a multi-line reply and bounds its length', () => {
    const response = `451-4.3.0 first line\r\n451 4.3.0 ${'x'.repeat(1000)}`;

    const reason = classifySmtpFailure({ responseCode: 451, response }).reason!;

    expect(reason).not.toMatch(/[\r\n]/);
    expect(reason.length).toBeLessThan(350);
  });

  it('has a row for every reply class, and no 4xx row that is permanent', () => {
    for (const cls of ['2xx', '3xx', '4xx', '5xx'] as const) {
      expect(SMTP_REPLY_OUTCOMES.some((r) => r.reply === cls && r.enhanced === undefined)).toBe(true);
    }
    const fourHundreds = SMTP_REPLY_OUTCOMES.filter(
      (r) => r.reply === '4xx' || (typeof r.reply === 'number' && r.reply < 500 && r.reply >= 400),
    );
    expect(fourHundreds.every((r) => r.class === 'retryable' || r.class === 'rate_limited')).toBe(true);
  });
});
