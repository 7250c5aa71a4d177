/**
 * The one text cut (shared/text/cut.ts) and every place that shortens text with it: a cut never
 * leaves half of a surrogate pair, whatever the position of the emoji, CJK or RTL text.
 */
import fc from 'fast-check';
import { cutText, hasUnstorableText, textLength, wellFormed } from '../../../shared/text/cut';
import { safeText } from '../../../services/notification/channels/outcome-table';
import { MAX_REASON_LENGTH, sanitizeReason } from '../../../services/notification/delivery/worker';
import { maskRecipient } from '../../../services/notification/delivery/mask';
import { MAX_MESSAGE_LENGTH, scrubText, stackFrames } from '../../../services/notification/monitor/scrub';

const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** True when `text` has no lone surrogate (JSON.stringify then writes no `\udXXX` escape). */
function isWellFormed(text: string): boolean {
  return !LONE.test(text) && !/\\ud[89a-f][0-9a-f]{2}/i.test(JSON.stringify(text));
}

// Emoji (pairs, a ZWJ sequence, a flag), CJK (BMP and a supplementary ideograph), RTL (Hebrew,
// Arabic) and ASCII.
const PIECES = ['a', 'Z', ' ', '😀', '👨‍👩‍👧', '🇫🇷', '中', '文', '𠀀', '𩸽', 'ש', 'ל', 'م', 'ر', 'é', '…'];
const mixed = fc.array(fc.constantFrom(...PIECES), { maxLength: 40 }).map((parts) => parts.join(''));

describe('cutText', () => {
  test('at every cut position, in code units: no lone surrogate, at most max, the longest prefix that fits', () => {
    fc.assert(
      fc.property(mixed, fc.constantFrom('', '…', '...'), (text, ellipsis) => {
        for (let max = 0; max <= text.length + 2; max++) {
          const out = cutText(text, max, { ellipsis });
          expect(isWellFormed(out)).toBe(true);
          expect(out.length).toBeLessThanOrEqual(max);
          if (text.length <= max) {
            expect(out).toBe(text);
            continue;
          }
          if (max < ellipsis.length) continue;
          expect(out.endsWith(ellipsis)).toBe(true);
          const kept = out.slice(0, out.length - ellipsis.length);
          expect(text.startsWith(kept)).toBe(true);
          // Maximal: only a whole pair that did not fit was left out.
          expect(kept.length).toBeGreaterThanOrEqual(max - ellipsis.length - 1);
        }
      }),
    );
  });

  test('at every cut position, in code points: no lone surrogate, at most max points', () => {
    fc.assert(
      fc.property(mixed, (text) => {
        const points = [...text];
        for (let max = 0; max <= points.length + 1; max++) {
          const out = cutText(text, max, { unit: 'code_point', ellipsis: '…' });
          expect(isWellFormed(out)).toBe(true);
          expect(textLength(out, 'code_point')).toBeLessThanOrEqual(max);
          if (points.length <= max) expect(out).toBe(text);
          else if (max >= 1) expect(out).toBe(`${points.slice(0, max - 1).join('')}…`);
        }
      }),
    );
  });

  test('keeping the end: no lone surrogate, a suffix of the text', () => {
    fc.assert(
      fc.property(mixed, (text) => {
        for (let max = 0; max <= text.length + 1; max++) {
          const out = cutText(text, max, { keep: 'end' });
          expect(isWellFormed(out)).toBe(true);
          expect(out.length).toBeLessThanOrEqual(max);
          expect(text.endsWith(out)).toBe(true);
          expect(out.length).toBeGreaterThanOrEqual(Math.min(max, text.length) - 1);
        }
      }),
    );
  });

  test('an emoji across the cut is left out whole; CJK and RTL are cut between characters', () => {
    expect(cutText('ab😀cd', 3)).toBe('ab');
    expect(cutText('ab😀cd', 4)).toBe('ab😀');
    expect(cutText('ab😀cd', 4, { ellipsis: '…' })).toBe('ab…');
    expect(cutText('中文𠀀字', 3)).toBe('中文');
    expect(cutText('שלום עולם', 4, { ellipsis: '…' })).toBe('שלו…');
    expect(cutText('مرحبا', 3, { unit: 'code_point' })).toBe('مرح');
    expect(cutText('😀😀😀', 2, { unit: 'code_point' })).toBe('😀😀');
    expect(cutText('ab😀cd', 3, { keep: 'end' })).toBe('cd');
    expect(cutText('abc', 1, { ellipsis: '...' })).toBe('.');
    expect(cutText('abc', -1)).toBe('');
  });

  test('wellFormed replaces lone surrogates and keeps pairs', () => {
    expect(wellFormed('a\ud83db')).toBe('a\ufffdb');
    expect(wellFormed('a\ude00')).toBe('a\ufffd');
    expect(wellFormed('😀\ud83d')).toBe('😀\ufffd');
    expect(wellFormed('😀中ש')).toBe('😀中ש');
  });
});

describe('every cut of provider and error text', () => {
  test('safeText (provider text, 300) with an emoji at every position across the cut', () => {
    for (let at = 290; at <= 305; at++) {
      const text = `${'x'.repeat(at)}😀${'y'.repeat(20)}`;
      const out = safeText(text);
      expect(isWellFormed(out)).toBe(true);
      expect(out.length).toBeLessThanOrEqual(303);
      expect(out.endsWith('...')).toBe(true);
    }
  });

  test('safeText keeps what fits and makes broken input well-formed', () => {
    expect(safeText('refused: 😀 中文 שלום')).toBe('refused: 😀 中文 שלום');
    expect(isWellFormed(safeText('bad \ud83d half'))).toBe(true);
  });

  test('sanitizeReason (stored reason, 500) with an emoji at every position across the cut', () => {
    for (let at = MAX_REASON_LENGTH - 5; at <= MAX_REASON_LENGTH + 2; at++) {
      const out = sanitizeReason(`${'r'.repeat(at)}😀${'中'.repeat(10)}`, 'fallback');
      expect(isWellFormed(out)).toBe(true);
      expect(out.length).toBeLessThanOrEqual(MAX_REASON_LENGTH);
    }
    expect(isWellFormed(sanitizeReason('half \udc00 pair', 'x'))).toBe(true);
  });

  test('fast-check: safeText and sanitizeReason of any mixed text are well-formed and bounded', () => {
    const long = fc
      .array(fc.constantFrom(...PIECES), { minLength: 100, maxLength: 400 })
      .map((p) => p.join(''));
    fc.assert(
      fc.property(long, (text) => {
        expect(isWellFormed(safeText(text))).toBe(true);
        const reason = sanitizeReason(`${text}${text}`, 'f');
        expect(isWellFormed(reason)).toBe(true);
        expect(reason.length).toBeLessThanOrEqual(MAX_REASON_LENGTH);
      }),
    );
  });

  test('scrubText and stackFrames (captured exceptions) never cut a pair', () => {
    for (let at = MAX_MESSAGE_LENGTH - 3; at <= MAX_MESSAGE_LENGTH + 1; at++) {
      const out = scrubText(`${'m'.repeat(at)}😀😀`);
      expect(isWellFormed(out)).toBe(true);
      expect(out.length).toBeLessThanOrEqual(MAX_MESSAGE_LENGTH);
    }
    const stack = Array.from({ length: 400 }, (_, i) => `    at fn😀${i} (/app/文件.ts:1:1)`).join('\n');
    expect(isWellFormed(stackFrames(`Error: x\n${stack}`))).toBe(true);
  });

  test('maskRecipient keeps whole characters of addresses and tokens', () => {
    expect(isWellFormed(maskRecipient('email', '😀jane@example.com'))).toBe(true);
    expect(maskRecipient('email', '😀jane@example.com')).toBe('😀***@example.com');
    const token = `😀😀${'t'.repeat(20)}😀😀`;
    const masked = maskRecipient('push', token);
    expect(isWellFormed(masked)).toBe(true);
    expect(masked).toBe('😀😀tt…tt😀😀');
  });
});

describe('hasUnstorableText', () => {
  test('finds a NUL or a lone surrogate in JSON.stringify output, keys included; a pair or an escaped backslash is text', () => {
    for (const value of [{ k: 'a\u0000' }, { k: '\ud800' }, { k: 'x\udfff' }, { 'k\ud83d': 1 }, ['\udc00']]) {
      expect(hasUnstorableText(JSON.stringify(value))).toBe(true);
    }
    for (const value of [{ k: '😀' }, { k: '\\u0000' }, { k: '\\ud800' }, { k: '\\\\' }, { k: '\u0001' }]) {
      expect(hasUnstorableText(JSON.stringify(value))).toBe(false);
    }
  });
});
