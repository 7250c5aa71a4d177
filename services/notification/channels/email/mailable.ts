/**
 * `Mailable`, the spec's message builder for email, and the JSON-safe message it produces.
 *
 * Everything a caller can get wrong is checked here, once, before a delivery is recorded: the drivers
 * trust an `OutboundEmail` (they only guard against a damaged stored payload). Each violation is an
 * InvalidArgumentError whose message starts with the field (`to[1]`, `subject`, `headers["X-Foo"]`,
 * `attachments[0]`), because the RPC layer shows the message and nothing else.
 */
import { newId } from '../../../../shared/runtime/ids';

import { parseOneAddress } from 'email-addresses';
import { convert as htmlToText } from 'html-to-text';

import { InvalidArgumentError } from '../../../../shared/errors';
import { DEFAULT_MAX_ATTACHMENT_BYTES, DEFAULT_MAX_MESSAGE_BYTES, type MailerConfig } from './config';
import { cutText } from '../../../../shared/text/cut';
import { longerThan } from '../../../../shared/text/check';

/**
 * The plain-text part of an HTML email, when none is given: the one rule, used by every email send and
 * by the templates area (a rendered email without a text part).
 */
export function textFromHtml(html: string): string {
  return htmlToText(html, { wordwrap: 78 });
}

/** One mailbox: the address and an optional display name. */
export interface EmailAddress {
  email: string;
  name?: string;
}

/** One attachment as stored and sent: the content is base64 so the message stays plain JSON. */
export interface EmailAttachment {
  filename: string;
  contentType: string;
  /** The content, base64 (standard alphabet, no line breaks). */
  contentBase64: string;
}

/**
 * A validated email, without its Message-ID: what the caller asked to send. The idempotency content
 * hash is taken over this, so the same request hashes the same on every try.
 */
export interface EmailMessage {
  to: EmailAddress[];
  cc: EmailAddress[];
  bcc: EmailAddress[];
  /** Display name of the sender; the address is always the backend's `from_email`. */
  fromName?: string;
  replyTo?: EmailAddress;
  subject: string;
  /** Plain text: as given, or derived from `html`. */
  text: string;
  html?: string;
  /** `X-...` headers (and List-Unsubscribe, List-Unsubscribe-Post), names as given. */
  headers: Record<string, string>;
  attachments: EmailAttachment[];
}

/**
 * What the mailers send (the delivery payload of the email channel): the message and its RFC 5322
 * Message-ID, assigned once when the delivery is recorded and sent unchanged on every attempt.
 */
export interface OutboundEmail extends EmailMessage {
  /** `<uuid@domain>`, angle brackets included. */
  messageId: string;
}

/** An attachment as a caller gives it. A string is taken as UTF-8 text. */
export interface AttachmentInput {
  filename: string;
  /** MIME type `type/subtype`; `application/octet-stream` when empty or absent. */
  contentType?: string;
  content: Uint8Array | string;
}

/** Every field of a Mailable at once (the shape of the SendEmail request). */
export interface MailableFields {
  to?: readonly string[];
  cc?: readonly string[];
  bcc?: readonly string[];
  fromName?: string;
  replyTo?: string;
  subject?: string;
  text?: string;
  html?: string;
  headers?: Readonly<Record<string, string>>;
  attachments?: readonly AttachmentInput[];
}

/** The limits a message is held to (from the `mailer` config section). */
export interface MailableLimits {
  maxAttachmentBytes: number;
  maxMessageBytes: number;
  maxRecipients: number;
}

/** The limits of the config defaults. */
export const DEFAULT_MAILABLE_LIMITS: Readonly<MailableLimits> = Object.freeze({
  maxAttachmentBytes: DEFAULT_MAX_ATTACHMENT_BYTES,
  maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES,
  maxRecipients: 100,
});

/** The limits configured in `mailer`. */
export function mailableLimits(config: MailerConfig): MailableLimits {
  return {
    maxAttachmentBytes: config.max_attachment_bytes,
    maxMessageBytes: config.max_message_bytes,
    maxRecipients: config.max_recipients,
  };
}

/**
 * RFC 5322 caps a line at 998 characters; a subject or header value longer than that gets folded
 * into something receivers display differently, so we refuse it instead. Counted, like the from
 * name and filename limits, in code points (an emoji is one character): the API's "characters".
 * Non-ASCII text goes out as RFC 2047 encoded words, which the mail library folds to the octet limit
 * of the wire, so the wire's octets do not bound what a caller may write.
 */
const MAX_LINE = 998;
const MAX_HEADERS = 50;
const MAX_ATTACHMENTS = 100;
const MAX_FILENAME = 255;
const MAX_NAME = 256;
/**
 * RFC 5321: 254 octets per path, 64 per local part: a protocol's octet limits, kept in `.length`
 * (addresses are ASCII here, non-ASCII ones are refused, so units, code points and octets agree).
 */
const MAX_ADDRESS = 254;
const MAX_LOCAL_PART = 64;

/**
 * What the parser accepted, narrowed to what every relay and API takes: a dot-atom local part (quoted
 * local parts such as `"x y"@example.com` are refused) and a domain of letter-digit-hyphen labels.
 */
const DOT_ATOM = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const DNS_LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
/**
 * A bare address already in the narrowed form above (dot-atom local part, at least two DNS labels):
 * the parser would return it unchanged with no display name, so it is taken as it is. Most recipients
 * look like this, and the parser costs several times the whole rest of `build` per address.
 */
const PLAIN_ADDRESS =
  /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
/** `X-` then RFC 5322 field-name characters, narrowed to letters, digits and `-`. */
const X_HEADER = /^X-[A-Za-z0-9][A-Za-z0-9-]*$/i;
/** The one-click unsubscribe headers of RFC 8058 (List-Unsubscribe, List-Unsubscribe-Post), allowed besides X-. */
const LIST_UNSUBSCRIBE_HEADER = /^List-Unsubscribe(-Post)?$/i;
/** `type/subtype` of RFC 2045 tokens, no parameters. */
const MIME_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*$/;
/** CR or LF: the header-injection characters. */
const LINE_BREAK = /[\r\n]/;
/** Control characters other than tab; NUL also cannot be stored (PostgreSQL text and jsonb). */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f]/;

/** Appends `items` to `list` one by one (a spread of a large array into `push` overflows the stack). */
function append<T>(list: T[], items: readonly T[]): void {
  for (const item of items) list.push(item);
}

/**
 * The message builder. Setters only collect; `build()` validates everything and produces the
 * `EmailMessage`, so errors name positions (`to[1]`) as the caller wrote them.
 */
export class Mailable {
  private readonly fields: {
    to: string[];
    cc: string[];
    bcc: string[];
    headers: [string, string][];
    attachments: AttachmentInput[];
    fromName?: string;
    replyTo?: string;
    subject?: string;
    text?: string;
    html?: string;
  } = { to: [], cc: [], bcc: [], headers: [], attachments: [] };

  /** A Mailable with every field given at once (what the RPC layer builds from a request). */
  static of(fields: MailableFields): Mailable {
    const m = new Mailable();
    // Appended, never spread into arguments: a request may carry any number of addresses (the limit
    // is checked by `build`), and a spread of 100,000 overflows the stack.
    append(m.fields.to, fields.to ?? []);
    append(m.fields.cc, fields.cc ?? []);
    append(m.fields.bcc, fields.bcc ?? []);
    if (fields.fromName !== undefined) m.fromName(fields.fromName);
    if (fields.replyTo !== undefined) m.replyTo(fields.replyTo);
    if (fields.subject !== undefined) m.subject(fields.subject);
    if (fields.text !== undefined) m.text(fields.text);
    if (fields.html !== undefined) m.html(fields.html);
    for (const [name, value] of Object.entries(fields.headers ?? {})) m.header(name, value);
    for (const a of fields.attachments ?? []) m.attach(a);
    return m;
  }

  /** Adds recipients (`jane@example.com` or `Jane Doe <jane@example.com>`). */
  to(...addresses: string[]): this {
    append(this.fields.to, addresses);
    return this;
  }

  /** Adds carbon-copy recipients. */
  cc(...addresses: string[]): this {
    append(this.fields.cc, addresses);
    return this;
  }

  /** Adds blind carbon-copy recipients: they receive the message but appear in no header. */
  bcc(...addresses: string[]): this {
    append(this.fields.bcc, addresses);
    return this;
  }

  /** The sender's display name (the address is the backend's `from_email`). Empty means none. */
  fromName(name: string): this {
    this.fields.fromName = name;
    return this;
  }

  /** The Reply-To address. Empty means none. */
  replyTo(address: string): this {
    this.fields.replyTo = address;
    return this;
  }

  /** The subject line (required). */
  subject(subject: string): this {
    this.fields.subject = subject;
    return this;
  }

  /** The plain-text body. */
  text(text: string): this {
    this.fields.text = text;
    return this;
  }

  /** The HTML body; plain text is derived from it when no text is given. */
  html(html: string): this {
    this.fields.html = html;
    return this;
  }

  /** Adds an `X-...` header. */
  header(name: string, value: string): this {
    this.fields.headers.push([name, value]);
    return this;
  }

  /** Adds an attachment. */
  attach(attachment: AttachmentInput): this {
    this.fields.attachments.push(attachment);
    return this;
  }

  /** Validates and produces the message; InvalidArgumentError naming the first bad field. */
  build(limits: MailableLimits = DEFAULT_MAILABLE_LIMITS): EmailMessage {
    const f = this.fields;
    // Before any address is parsed: a request far over the limit costs no more than one at it.
    if (f.to.length + f.cc.length + f.bcc.length > limits.maxRecipients) {
      invalid('to', `at most ${limits.maxRecipients} recipients (to, cc and bcc together) are allowed`);
    }
    const recipients = new Map<string, string>();
    const addressList = (list: string[], field: 'to' | 'cc' | 'bcc'): EmailAddress[] =>
      list.map((raw, i) => {
        const at = `${field}[${i}]`;
        const address = parseMailbox(raw, at);
        // Providers refuse (SendGrid) or double-deliver (SMTP) an address listed twice.
        const key = address.email.toLowerCase();
        const earlier = recipients.get(key);
        if (earlier !== undefined) invalid(at, `${address.email} is already a recipient (${earlier})`);
        recipients.set(key, at);
        return address;
      });
    const to = addressList(f.to, 'to');
    const cc = addressList(f.cc, 'cc');
    const bcc = addressList(f.bcc, 'bcc');
    // A `to` recipient, not just cc/bcc: the v3 API requires one, and a message addressed to nobody
    // visible reads as spam.
    if (to.length === 0) invalid('to', 'at least one recipient is required');

    const message: EmailMessage = { to, cc, bcc, subject: '', text: '', headers: {}, attachments: [] };

    const fromName = f.fromName ?? '';
    if (fromName !== '') message.fromName = singleLine(fromName, 'from_name', MAX_NAME);
    const replyTo = f.replyTo ?? '';
    if (replyTo !== '') message.replyTo = parseMailbox(replyTo, 'reply_to');

    const subject = f.subject ?? '';
    if (subject.trim() === '') invalid('subject', 'is required');
    message.subject = singleLine(subject, 'subject', MAX_LINE);

    const text = f.text ?? '';
    const html = f.html ?? '';
    if (text.trim() === '' && html.trim() === '') invalid('text', 'text or html is required');
    noNul(text, 'text');
    noNul(html, 'html');
    if (html !== '') message.html = html;
    // A plain-text part keeps the message readable in text-only clients and lowers spam scores.
    message.text = text.trim() !== '' ? text : textFromHtml(html);

    let bytes = utf8(message.subject) + utf8(message.text) + utf8(html) + utf8(message.fromName ?? '');

    if (f.headers.length > MAX_HEADERS) invalid('headers', `at most ${MAX_HEADERS} headers are allowed`);
    const headerNames = new Set<string>();
    for (const [name, value] of f.headers) {
      const at = `headers[${JSON.stringify(name)}]`;
      if (typeof name !== 'string' || !(X_HEADER.test(name) || LIST_UNSUBSCRIBE_HEADER.test(name))) {
        invalid(
          at,
          'a header name must be X- followed by letters, digits or "-" (or List-Unsubscribe, List-Unsubscribe-Post)',
        );
      }
      if (headerNames.has(name.toLowerCase())) invalid(at, 'is given twice');
      headerNames.add(name.toLowerCase());
      message.headers[name] = singleLine(value, at, MAX_LINE);
      bytes += utf8(name) + utf8(value);
    }

    if (f.attachments.length > MAX_ATTACHMENTS) {
      invalid('attachments', `at most ${MAX_ATTACHMENTS} attachments are allowed`);
    }
    f.attachments.forEach((a, i) => {
      const at = `attachments[${i}]`;
      const filename = singleLine(a.filename ?? '', `${at}.filename`, MAX_FILENAME);
      if (filename.trim() === '') invalid(`${at}.filename`, 'is required');
      const contentType =
        a.contentType === undefined || a.contentType === '' ? 'application/octet-stream' : a.contentType;
      if (!MIME_TYPE.test(contentType))
        invalid(`${at}.content_type`, 'must be a MIME type such as application/pdf');
      const content = typeof a.content === 'string' ? Buffer.from(a.content, 'utf8') : a.content;
      // isView, not instanceof: bytes from another realm (a vm context, a worker) are bytes too.
      if (!ArrayBuffer.isView(content)) invalid(`${at}.content`, 'must be bytes or a string');
      if (content.byteLength > limits.maxAttachmentBytes) {
        invalid(
          at,
          `is ${content.byteLength} bytes, over mailer.max_attachment_bytes (${limits.maxAttachmentBytes})`,
        );
      }
      bytes += content.byteLength + utf8(filename);
      const buffer = Buffer.isBuffer(content)
        ? content
        : Buffer.from(content.buffer, content.byteOffset, content.byteLength);
      message.attachments.push({ filename, contentType, contentBase64: buffer.toString('base64') });
    });

    if (bytes > limits.maxMessageBytes) {
      invalid('message', `is ${bytes} bytes, over mailer.max_message_bytes (${limits.maxMessageBytes})`);
    }
    return message;
  }
}

/**
 * A fresh RFC 5322 Message-ID, `<uuid@domain>`, in the domain of the sender (`fromEmail`), as mail
 * receivers and spam filters expect. The pipeline calls it once per delivery.
 */
export function newMessageId(fromEmail: string): string {
  const at = fromEmail.lastIndexOf('@');
  const domain = fromEmail.slice(at + 1).toLowerCase();
  if (at < 1 || !/^[a-z0-9.-]+$/.test(domain) || !domain.includes('.')) {
    throw new InvalidArgumentError(`from_email: "${fromEmail}" has no domain for a Message-ID`, 'from_email');
  }
  return `<${newId()}@${domain}>`;
}

/** The payload the mailers send: `message` with a new Message-ID in the domain of `fromEmail`. */
export function toOutboundEmail(message: EmailMessage, fromEmail: string): OutboundEmail {
  return { ...message, messageId: newMessageId(fromEmail) };
}

/**
 * Why `payload` is not a usable OutboundEmail, or undefined when it is. Drivers check what comes back
 * from the delivery store before sending it (a damaged record fails permanently instead of crashing).
 */
export function outboundEmailProblem(payload: unknown): string | undefined {
  if (typeof payload !== 'object' || payload === null) return 'payload is not an object';
  const p = payload as Partial<OutboundEmail>;
  if (typeof p.messageId !== 'string' || !/^<[^<>\s]+@[^<>\s]+>$/.test(p.messageId)) {
    return 'payload has no valid messageId';
  }
  for (const list of ['to', 'cc', 'bcc'] as const) {
    const v = p[list];
    if (!Array.isArray(v) || !v.every((a) => typeof a?.email === 'string'))
      return `payload.${list} is malformed`;
  }
  if (p.to!.length === 0) return 'payload has no recipient';
  if (typeof p.subject !== 'string' || typeof p.text !== 'string') return 'payload has no subject or text';
  if (typeof p.headers !== 'object' || p.headers === null) return 'payload.headers is malformed';
  if (
    !Array.isArray(p.attachments) ||
    !p.attachments.every((a) => typeof a?.filename === 'string' && typeof a.contentBase64 === 'string')
  ) {
    return 'payload.attachments is malformed';
  }
  return undefined;
}

/** Formats an address for a header: `"Name" <email>` or the bare address. */
export function formatAddress(address: EmailAddress): string {
  return address.name ? `${JSON.stringify(address.name)} <${address.email}>` : address.email;
}

function invalid(field: string, problem: string): never {
  throw new InvalidArgumentError(`${field}: ${problem}`, field);
}

function utf8(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

function noNul(value: string, field: string): void {
  if (value.includes('\u0000')) invalid(field, 'must not contain NUL characters');
}

/** A one-line value: no CR/LF (header injection), no other control characters, at most `max`. */
function singleLine(value: unknown, field: string, max: number): string {
  if (typeof value !== 'string') invalid(field, 'must be a string');
  if (LINE_BREAK.test(value)) invalid(field, 'must not contain line breaks (CR or LF)');
  if (CONTROL.test(value)) invalid(field, 'must not contain control characters');
  if (longerThan(value, max)) invalid(field, `must be at most ${max} characters`);
  return value;
}

/** Shows a caller's value in an error: quoted (so CR/LF stay visible), cut to a readable length. */
function shown(value: string): string {
  return JSON.stringify(value.length > 80 ? `${cutText(value, 80)}...` : value);
}

/**
 * One mailbox, parsed by `email-addresses` (RFC 5322): `jane@example.com` or `Jane <jane@example.com>`.
 * Refused: groups, lists, line breaks, quoted local parts, domains without a dot or given as an IP
 * literal, non-ASCII addresses (not every relay speaks SMTPUTF8), addresses over the RFC 5321 lengths.
 */
export function parseMailbox(raw: unknown, field: string): EmailAddress {
  if (typeof raw !== 'string') invalid(field, 'must be a string');
  const bad = (): never => invalid(field, `${shown(raw)} is not a valid e-mail address`);
  if (raw.trim() === '' || LINE_BREAK.test(raw) || CONTROL.test(raw)) bad();
  if (raw.length <= MAX_ADDRESS && PLAIN_ADDRESS.test(raw)) {
    if (raw.indexOf('@') > MAX_LOCAL_PART) bad();
    return { email: raw };
  }
  const parsed = parseOneAddress({ input: raw, rejectTLD: true, rfc6532: false });
  if (parsed === null || parsed.type !== 'mailbox') return bad();
  if (
    !DOT_ATOM.test(parsed.local) ||
    !parsed.domain.split('.').every((label) => DNS_LABEL.test(label)) ||
    parsed.address.length > MAX_ADDRESS ||
    parsed.local.length > MAX_LOCAL_PART
  ) {
    return bad();
  }
  const name = parsed.name?.trim();
  // The parser takes ASCII display names only (rfc6532 off), so UTF-16 units are characters here.
  if (name && name.length > MAX_NAME) invalid(field, `display name must be at most ${MAX_NAME} characters`);
  return name ? { email: parsed.address, name } : { email: parsed.address };
}
