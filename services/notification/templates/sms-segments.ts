/**
 * How an SMS text travels: GSM 03.38 7-bit (GSM-7) when every character is in its basic table or
 * extension table (an extension character, `€` `[` `]` `{` `}` `\` `~` `^` `|` and form feed, takes
 * two septets), otherwise UCS-2 (UTF-16 code units: an emoji is two). One message holds 160 GSM-7
 * septets or 70 UCS-2 units; a concatenated message holds 153 or 67 per segment (the rest is the
 * user data header). A segment never ends between the two septets of an extension character nor
 * between the two units of a surrogate pair, which then moves whole to the next segment.
 *
 * Hand-written: the npm libraries that count segments (`sms-segments-calculator`, `split-sms`) are
 * not dependencies of this project, and the table is a fixed standard of 128 + 10 characters.
 */

/** The GSM 03.38 basic character set (one septet each). */
const GSM7_BASIC =
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞ\u00a0ÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?' +
  '¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà';
/** The GSM 03.38 extension table (escape + one septet: two each). */
const GSM7_EXTENSION = '\f^{}\\[~]|€';

// The basic table's ESC position (0x1B) is shown above as a no-break space placeholder: remove it.
const BASIC = new Set([...GSM7_BASIC].filter((c) => c !== '\u00a0'));
const EXTENSION = new Set([...GSM7_EXTENSION]);

/** How a text is sent as SMS. */
export interface SmsSegments {
  encoding: 'GSM-7' | 'UCS-2';
  /** Messages the text takes (1 for an empty text). */
  segments: number;
  /** Septets (GSM-7, extension characters counted twice) or UTF-16 units (UCS-2). */
  units: number;
}

const LIMITS = {
  'GSM-7': { single: 160, concatenated: 153 },
  'UCS-2': { single: 70, concatenated: 67 },
} as const;

/** The units of each character of `text` (code points) in `encoding`. */
function widths(text: string, encoding: SmsSegments['encoding']): number[] {
  const out: number[] = [];
  for (const ch of text) out.push(encoding === 'GSM-7' ? (EXTENSION.has(ch) ? 2 : 1) : ch.length);
  return out;
}

/** True when every character of `text` is in the GSM-7 tables. */
export function isGsm7(text: string): boolean {
  for (const ch of text) if (!BASIC.has(ch) && !EXTENSION.has(ch)) return false;
  return true;
}

/**
 * The segments of `text`, packed greedily: a character that does not fit whole in a segment starts
 * the next one (so a segment may hold one unit less than its limit).
 */
export function splitSegments(text: string): { encoding: SmsSegments['encoding']; parts: string[] } {
  const encoding = isGsm7(text) ? 'GSM-7' : 'UCS-2';
  const chars = [...text];
  const w = widths(text, encoding);
  const total = w.reduce((a, b) => a + b, 0);
  const limit = LIMITS[encoding];
  if (total <= limit.single) return { encoding, parts: [text] };
  const parts: string[] = [];
  let current = '';
  let used = 0;
  chars.forEach((ch, i) => {
    if (used + w[i]! > limit.concatenated) {
      parts.push(current);
      current = '';
      used = 0;
    }
    current += ch;
    used += w[i]!;
  });
  if (current !== '') parts.push(current);
  return { encoding, parts };
}

/** How many segments `text` takes, in which encoding, counting which units. */
export function smsSegments(text: string): SmsSegments {
  const { encoding, parts } = splitSegments(text);
  return { encoding, segments: parts.length, units: widths(text, encoding).reduce((a, b) => a + b, 0) };
}
