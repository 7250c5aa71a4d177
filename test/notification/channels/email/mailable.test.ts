/**
 * Mailable: what it accepts, what it produces, and every refusal naming its field.
 */
import { parseOneAddress } from 'email-addresses';
import fc from 'fast-check';

import { InvalidArgumentError } from '../../../../shared/errors';
import {
  DEFAULT_MAILABLE_LIMITS,
  Mailable,
  type MailableFields,
  newMessageId,
  outboundEmailProblem,
  toOutboundEmail,
} from '../../../../services/notification/channels/email/mailable';

const valid: MailableFields = { to: ['jane@example.com'], subject: 'Hello', text: 'Hi' };

function refusal(fields: MailableFields, limits = DEFAULT_MAILABLE_LIMITS): InvalidArgumentError {
  try {
    Mailable.of(fields).build(limits);
  } catch (err) {
    if (err instanceof InvalidArgumentError) return err;
    throw err;
  }
  throw new Error('expected an InvalidArgumentError');
}

describe('Mailable', () => {
  it('builds a JSON-safe message that survives a JSON round trip unchanged', () => {
    const message = new Mailable()
      .to('Jane Doe <jane@example.com>', 'bob@example.org')
      .cc('carl@example.com')
      .bcc('audit@example.net')
      .fromName('Acme')
      .replyTo('support@acme.example.com')
      .subject('Your invoice')
      .text('See attached.')
      .html('<p>See attached.</p>')
      .header('X-Campaign', 'spring')
      .attach({ filename: 'a.pdf', contentType: 'application/pdf', content: Buffer.from([1, 2, 3]) })
      .build();

    expect(message).toEqual({
      to: [{ email: 'jane@example.com', name: 'Jane Doe' }, { email: 'bob@example.org' }],
      cc: [{ email: 'carl@example.com' }],
      bcc: [{ email: 'audit@example.net' }],
      fromName: 'Acme',
      replyTo: { email: 'support@acme.example.com' },
      subject: 'Your invoice',
      text: 'See attached.',
      html: '<p>See attached.</p>',
      headers: { 'X-Campaign': 'spring' },
      attachments: [{ filename: 'a.pdf', contentType: 'application/pdf', contentBase64: 'AQID' }],
    });
    expect(JSON.parse(JSON.stringify(message))).toEqual(message);
  });

  it('accepts the one-click unsubscribe pair (RFC 8058) besides X- headers', () => {
    const headers = {
      'List-Unsubscribe': '<https://notify.example.com/u/abc>',
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    };
    expect(Mailable.of({ ...valid, headers }).build().headers).toEqual(headers);
  });

  it('derives the plain text from HTML when only HTML is given', () => {
    const message = Mailable.of({
      ...valid,
      text: undefined,
      html: '<h1>Hi</h1><p>Your <b>code</b> is 42.</p>',
    }).build();

    expect(message.html).toContain('<b>code</b>');
    expect(message.text).toContain('Your code is 42.');
    expect(message.text).not.toContain('<');
  });

  it('keeps the given text when both are given', () => {
    expect(Mailable.of({ ...valid, html: '<p>rich</p>' }).build().text).toBe('Hi');
  });

  it('defaults an attachment content type to application/octet-stream and takes strings as UTF-8', () => {
    const message = Mailable.of({ ...valid, attachments: [{ filename: 'n.txt', content: 'é' }] }).build();

    expect(message.attachments[0]).toEqual({
      filename: 'n.txt',
      contentType: 'application/octet-stream',
      contentBase64: Buffer.from('é', 'utf8').toString('base64'),
    });
  });

  it.each<[string, MailableFields, string]>([
    ['no recipient', { ...valid, to: [] }, 'to'],
    ['only a bcc recipient', { ...valid, to: [], bcc: ['a@example.com'] }, 'to'],
    ['an invalid to address', { ...valid, to: ['jane@example.com', 'bob@'] }, 'to[1]'],
    [
      'a to address with a header injected',
      { ...valid, to: ['a@example.com\r\nBcc: x@example.com'] },
      'to[0]',
    ],
    ['two addresses in one entry', { ...valid, to: ['a@example.com, b@example.com'] }, 'to[0]'],
    ['a group', { ...valid, to: ['team: a@example.com;'] }, 'to[0]'],
    ['a domain without a dot', { ...valid, to: ['a@localhost'] }, 'to[0]'],
    ['an IP literal domain', { ...valid, to: ['a@[127.0.0.1]'] }, 'to[0]'],
    ['a quoted local part', { ...valid, to: ['"a b"@example.com'] }, 'to[0]'],
    ['a non-ASCII address', { ...valid, to: ['jöran@example.com'] }, 'to[0]'],
    ['a local part over 64 characters', { ...valid, to: [`${'a'.repeat(65)}@example.com`] }, 'to[0]'],
    ['an invalid cc address', { ...valid, cc: ['nope'] }, 'cc[0]'],
    ['an invalid bcc address', { ...valid, bcc: ['ok@example.com', 'x@y'] }, 'bcc[1]'],
    ['an invalid reply-to', { ...valid, replyTo: 'support' }, 'reply_to'],
    ['the same recipient twice across lists', { ...valid, cc: ['JANE@example.com'] }, 'cc[0]'],
    ['a missing subject', { ...valid, subject: undefined }, 'subject'],
    ['a blank subject', { ...valid, subject: '   ' }, 'subject'],
    ['CR/LF in the subject', { ...valid, subject: 'Hi\r\nBcc: x@example.com' }, 'subject'],
    ['a bare LF in the subject', { ...valid, subject: 'Hi\nthere' }, 'subject'],
    ['a control character in the subject', { ...valid, subject: 'Hi\u0007' }, 'subject'],
    ['a subject over 998 characters', { ...valid, subject: 's'.repeat(999) }, 'subject'],
    ['neither text nor html', { ...valid, text: undefined }, 'text'],
    ['blank text and html', { ...valid, text: ' ', html: '' }, 'text'],
    ['NUL in the text', { ...valid, text: 'a\u0000b' }, 'text'],
    [
      'a header name that is not X-',
      { ...valid, headers: { 'Reply-To': 'x@example.com' } },
      'headers["Reply-To"]',
    ],
    ['a header name with a colon', { ...valid, headers: { 'X-A:B': 'v' } }, 'headers["X-A:B"]'],
    ['CR/LF in a header name', { ...valid, headers: { 'X-A\r\nBcc': 'v' } }, 'headers["X-A\\r\\nBcc"]'],
    [
      'CR/LF in a header value',
      { ...valid, headers: { 'X-Tag': 'a\r\nBcc: x@example.com' } },
      'headers["X-Tag"]',
    ],
    ['a header given twice', { ...valid, headers: { 'X-Tag': 'a', 'x-tag': 'b' } }, 'headers["x-tag"]'],
    ['CR/LF in the from name', { ...valid, fromName: 'Acme\r\nBcc: x@example.com' }, 'from_name'],
    [
      'an attachment without a filename',
      { ...valid, attachments: [{ filename: '', content: 'x' }] },
      'attachments[0].filename',
    ],
    [
      'CR/LF in a filename',
      { ...valid, attachments: [{ filename: 'a\r\n.txt', content: 'x' }] },
      'attachments[0].filename',
    ],
    [
      'a malformed content type',
      { ...valid, attachments: [{ filename: 'a', contentType: 'pdf', content: 'x' }] },
      'attachments[0].content_type',
    ],
  ])('refuses %s, naming the field', (_what, fields, field) => {
    const err = refusal(fields);

    expect(err.field).toBe(field);
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message.startsWith(`${field}: `)).toBe(true);
  });

  // Limits in characters count code points: an emoji is two UTF-16 units but one character.
  it.each([
    ['emoji', '😀'],
    ['supplementary CJK', '𠀀'],
    ['BMP CJK', '中'],
    ['RTL (Arabic)', 'م'],
  ])('takes %s at each one-line limit in characters and refuses one more', (_name, c) => {
    const bound = { subject: 998, fromName: 256, header: 998, filename: 255 };
    const at = (n: typeof bound): MailableFields => ({
      ...valid,
      subject: c.repeat(n.subject),
      fromName: c.repeat(n.fromName),
      headers: { 'X-Tag': c.repeat(n.header) },
      attachments: [{ filename: c.repeat(n.filename), content: 'x' }],
    });
    const message = Mailable.of(at(bound)).build();
    expect(message.subject).toBe(c.repeat(998));
    expect(message.fromName).toBe(c.repeat(256));
    expect(message.headers['X-Tag']).toBe(c.repeat(998));
    expect(message.attachments[0]!.filename).toBe(c.repeat(255));
    const over: [keyof typeof bound, string, string][] = [
      ['subject', 'subject', 'subject: must be at most 998 characters'],
      ['fromName', 'from_name', 'from_name: must be at most 256 characters'],
      ['header', 'headers["X-Tag"]', 'headers["X-Tag"]: must be at most 998 characters'],
      ['filename', 'attachments[0].filename', 'attachments[0].filename: must be at most 255 characters'],
    ];
    for (const [key, field, text] of over) {
      const err = refusal(at({ ...bound, [key]: bound[key] + 1 }));
      expect([err.field, err.message]).toEqual([field, text]);
    }
  });

  it('quotes a refused address in the message with its line breaks visible', () => {
    expect(refusal({ ...valid, to: ['a@example.com\r\nBcc: x'] }).message).toBe(
      'to[0]: "a@example.com\\r\\nBcc: x" is not a valid e-mail address',
    );
  });

  describe('size limits', () => {
    const limits = { maxAttachmentBytes: 1000, maxMessageBytes: 3000, maxRecipients: 3 };
    const bytes = (n: number) => new Uint8Array(n);

    it('accepts an attachment of exactly max_attachment_bytes and refuses one byte more', () => {
      expect(() =>
        Mailable.of({ ...valid, attachments: [{ filename: 'a', content: bytes(1000) }] }).build(limits),
      ).not.toThrow();

      const err = refusal(
        {
          ...valid,
          attachments: [
            { filename: 'ok', content: bytes(1) },
            { filename: 'b', content: bytes(1001) },
          ],
        },
        limits,
      );
      expect(err.field).toBe('attachments[1]');
      expect(err.message).toBe('attachments[1]: is 1001 bytes, over mailer.max_attachment_bytes (1000)');
    });

    it('counts subject, bodies, headers and attachments against max_message_bytes', () => {
      // subject 5 + text 2 + "X-Pad" 5 + value 88 + 3 x (1000 + filename 1) = 3103 > 3000
      const fields: MailableFields = {
        ...valid,
        headers: { 'X-Pad': 'p'.repeat(88) },
        attachments: ['a', 'b', 'c'].map((filename) => ({ filename, content: bytes(1000) })),
      };

      const err = refusal(fields, limits);

      expect(err.field).toBe('message');
      expect(err.message).toBe('message: is 3103 bytes, over mailer.max_message_bytes (3000)');
    });

    it('accepts a message of exactly max_message_bytes', () => {
      // subject 5 + text 2 + 2 x (1000 + 1) + text padding
      const fields: MailableFields = {
        ...valid,
        text: 't'.repeat(3000 - 5 - 2 * 1001),
        attachments: ['a', 'b'].map((filename) => ({ filename, content: bytes(1000) })),
      };

      expect(() => Mailable.of(fields).build(limits)).not.toThrow();
      expect(refusal({ ...fields, text: `${fields.text}t` }, limits).field).toBe('message');
    });

    it('accepts 50 headers and refuses 51', () => {
      const headers = (n: number) =>
        Object.fromEntries(Array.from({ length: n }, (_, i) => [`X-H${i}`, 'v']));

      expect(() => Mailable.of({ ...valid, headers: headers(50) }).build()).not.toThrow();
      expect(refusal({ ...valid, headers: headers(51) }).field).toBe('headers');
    });

    it('accepts 100 attachments and refuses 101', () => {
      const files = (n: number) => Array.from({ length: n }, (_, i) => ({ filename: `f${i}`, content: 'x' }));

      expect(() => Mailable.of({ ...valid, attachments: files(100) }).build()).not.toThrow();
      expect(refusal({ ...valid, attachments: files(101) }).field).toBe('attachments');
    });

    it('accepts max_recipients recipients and refuses one more', () => {
      const three = { ...valid, cc: ['b@example.com'], bcc: ['c@example.com'] };
      expect(() => Mailable.of(three).build(limits)).not.toThrow();

      expect(refusal({ ...three, bcc: ['c@example.com', 'd@example.com'] }, limits).field).toBe('to');
    });
  });
});

describe('newMessageId', () => {
  it('makes an RFC 5322 id in the domain of the sender, a new one each call', () => {
    const a = newMessageId('noreply@Mail.Example.com');
    const b = newMessageId('noreply@mail.example.com');

    expect(a).toMatch(/^<[0-9a-f-]{36}@mail\.example\.com>$/);
    expect(b).not.toBe(a);
  });

  it('refuses a sender without a domain', () => {
    expect(() => newMessageId('noreply')).toThrow(InvalidArgumentError);
  });
});

describe('toOutboundEmail and outboundEmailProblem', () => {
  it('accepts what toOutboundEmail made, after a JSON round trip', () => {
    const payload = toOutboundEmail(Mailable.of(valid).build(), 'noreply@example.com');

    expect(outboundEmailProblem(JSON.parse(JSON.stringify(payload)))).toBeUndefined();
  });

  it.each<[string, unknown]>([
    ['null', null],
    ['no message id', { ...Mailable.of(valid).build() }],
    ['no recipients', { ...toOutboundEmail(Mailable.of(valid).build(), 'n@example.com'), to: [] }],
    [
      'a broken attachment',
      { ...toOutboundEmail(Mailable.of(valid).build(), 'n@example.com'), attachments: [{}] },
    ],
  ])('names the problem of a damaged payload: %s', (_what, payload) => {
    expect(outboundEmailProblem(payload)).toEqual(expect.any(String));
  });
});

describe('bare addresses (taken without the full parser)', () => {
  const atext = fc.constantFrom(..."abcXYZ019!#$%&'*+/=?^_`{|}~-".split(''));
  const atom = fc.array(atext, { minLength: 1, maxLength: 8 }).map((c) => c.join(''));
  const local = fc.array(atom, { minLength: 1, maxLength: 4 }).map((a) => a.join('.'));
  const ldh = fc.constantFrom(...'aZ09-'.split(''));
  const label = fc
    .tuple(fc.constantFrom('a', 'Q', '7'), fc.array(ldh, { maxLength: 6 }), fc.constantFrom('b', 'Z', '3'))
    .map(([first, middle, last]) => first + middle.join('') + last);
  const domain = fc.array(label, { minLength: 2, maxLength: 4 }).map((l) => l.join('.'));
  const buildTo = (address: string) => Mailable.of({ ...valid, to: [address] }).build().to[0];

  it('gives what the RFC 5322 parser gives for every address of the plain form', () => {
    fc.assert(
      fc.property(local, domain, (l, d) => {
        const address = `${l}@${d}`;
        const parsed = parseOneAddress({ input: address, rejectTLD: true, rfc6532: false });
        expect(parsed).not.toBeNull();
        expect(parsed!.type).toBe('mailbox');
        expect(buildTo(address)).toEqual({ email: (parsed as { address: string }).address });
      }),
      { numRuns: 500 },
    );
  });

  it('still refuses what the lengths and the dot rule refuse', () => {
    expect(refusal({ ...valid, to: [`${'a'.repeat(65)}@example.com`] }).field).toBe('to[0]');
    expect(
      refusal({
        ...valid,
        to: [`a@${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}.${'e'.repeat(70)}.com`],
      }).field,
    ).toBe('to[0]');
    expect(refusal({ ...valid, to: ['a@localhost'] }).field).toBe('to[0]');
    expect(refusal({ ...valid, to: ['a..b@example.com'] }).field).toBe('to[0]');
    expect(refusal({ ...valid, to: ['a@-example.com'] }).field).toBe('to[0]');
    expect(buildTo(`${'a'.repeat(64)}@example.com`)).toEqual({ email: `${'a'.repeat(64)}@example.com` });
  });
});
