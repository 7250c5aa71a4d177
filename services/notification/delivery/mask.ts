/**
 * The one recipient mask of the pipeline: what responses and log lines show instead of an email
 * address, a phone number or a device token.
 */
import { cutText } from '../../../shared/text/cut';
import type { Channel } from './driver';

function maskEmail(address: string): string {
  const at = address.lastIndexOf('@');
  if (at <= 0) return '***';
  // The first character whole (an address may start with an emoji or a CJK ideograph).
  return `${cutText(address, 1, { unit: 'code_point' })}***${address.slice(at)}`;
}

function maskPhone(number: string): string {
  const digits = number.replace(/[^\d+]/g, '');
  // Keep the country prefix (up to "+1555") and the last three digits: `+1555****567`.
  if (digits.length < 9) return '****';
  const head = digits.startsWith('+') ? digits.slice(0, 5) : digits.slice(0, 4);
  return `${head}****${digits.slice(-3)}`;
}

function maskToken(token: string): string {
  if (token.length < 12) return '…';
  const points = { unit: 'code_point' } as const;
  return `${cutText(token, 4, points)}…${cutText(token, 4, { ...points, keep: 'end' })}`;
}

/**
 * Masks a recipient for display: `j***@example.com` (each address of a comma-separated list),
 * `+1555****567`, `abcd…wxyz`. Never reveals more than a few characters, whatever the input.
 */
export function maskRecipient(channel: Channel, recipient: string): string {
  switch (channel) {
    case 'email':
      // An email goes to several addresses (to, cc, bcc): each is masked on its own.
      return recipient
        .split(',')
        .map((address) => maskEmail(address.trim()))
        .join(', ');
    case 'sms':
      return maskPhone(recipient);
    case 'push':
      return maskToken(recipient);
  }
}
