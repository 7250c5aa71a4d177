/**
 * The one check of a caller's text (shared/text/check.ts): limits in code points (an emoji or a
 * supplementary CJK ideograph is one character though it is two UTF-16 units), control characters
 * (C0, DEL, C1), storable text (no NUL, no lone surrogate), one wording for every refusal.
 */
import { invalidArgument } from '../../support/call-errors';
import {
  checkText,
  hasControlCharacters,
  longerThan,
  replaceControlCharacters,
  storableLine,
} from '../../../shared/text/check';

describe('longerThan', () => {
  test.each([
    ['emoji (two UTF-16 units each)', '😀'],
    ['supplementary CJK ideographs', '𠀀'],
    ['BMP CJK', '中'],
    ['RTL (Hebrew)', 'ש'],
  ])('%s: N at a limit of N fit, N+1 do not', (_name, unit) => {
    expect(longerThan(unit.repeat(5), 5)).toBe(false);
    expect(longerThan(unit.repeat(6), 5)).toBe(true);
  });

  test('a lone surrogate counts as one character', () => {
    expect(longerThan('a\ud800', 2)).toBe(false);
    expect(longerThan('a\ud800b', 2)).toBe(true);
  });
});

describe('hasControlCharacters and replaceControlCharacters', () => {
  test('C0, DEL and C1 are control characters; the characters around them are not', () => {
    for (const c of ['\u0000', '\t', '\n', '\u001f', '\u007f', '\u0080', '\u0085', '\u009f']) {
      expect(hasControlCharacters(`a${c}b`)).toBe(true);
    }
    for (const c of [' ', '~', '\u00a0', 'é', '😀', '中', 'م', '\u200f']) {
      expect(hasControlCharacters(`a${c}b`)).toBe(false);
    }
  });

  test('each control character is replaced, the rest kept as it is', () => {
    expect(replaceControlCharacters('a\u0000b\n\u0085😀', '?')).toBe('a?b??😀');
    expect(replaceControlCharacters('ש\tל')).toBe('של');
  });
});

describe('checkText', () => {
  test('at the bound in emoji and CJK the text is taken; one more character is refused', () => {
    expect(checkText('😀'.repeat(4), 'user_id', { max: 4 })).toBe('😀😀😀😀');
    expect(checkText('中文𠀀𩸽', 'user_id', { max: 4 })).toBe('中文𠀀𩸽');
    const over = invalidArgument(() => checkText('😀'.repeat(5), 'user_id', { max: 4 }));
    expect(over.message).toBe('user_id is longer than 4 characters');
    expect(over.field).toBe('user_id');
    expect(invalidArgument(() => checkText('中文𠀀𩸽x', 'user_id', { max: 4 })).message).toBe(
      'user_id is longer than 4 characters',
    );
  });

  test('required: non_empty refuses "" and a non-string; non_blank also refuses white space only', () => {
    expect(invalidArgument(() => checkText('', 'key', { max: 8, required: 'non_empty' })).message).toBe(
      'key is required',
    );
    expect(invalidArgument(() => checkText(7, 'key', { max: 8 })).message).toBe('key is required');
    expect(checkText('  ', 'key', { max: 8, required: 'non_empty' })).toBe('  ');
    expect(invalidArgument(() => checkText('  ', 'title', { max: 8, required: 'non_blank' })).message).toBe(
      'title is required',
    );
    expect(checkText('', 'topic', { max: 8 })).toBe('');
  });

  test('control characters are refused unless allowed; NUL and lone surrogates never are storable', () => {
    expect(invalidArgument(() => checkText('a\u0085b', 'key', { max: 8 })).message).toBe(
      'key contains control characters',
    );
    expect(checkText('line\nline', 'body', { max: 20, controls: 'allow' })).toBe('line\nline');
    expect(invalidArgument(() => checkText('a\u0000b', 'body', { max: 8, controls: 'allow' })).message).toBe(
      'body must not contain NUL characters or broken text (a lone surrogate)',
    );
    for (const broken of ['k\ud800', 'k\udc00', '\ude00😀']) {
      expect(invalidArgument(() => checkText(broken, 'key', { max: 8 })).message).toBe(
        'key must not contain NUL characters or broken text (a lone surrogate)',
      );
    }
  });
});

describe('storableLine', () => {
  test('folds each run of control characters to one space, trims, and replaces lone surrogates', () => {
    expect(storableLine('  550 mailbox\r\n\tfull\u0085😀 ')).toBe('550 mailbox full 😀');
    expect(storableLine('bad \ud83d end\u0000')).toBe('bad \ufffd end');
    expect(storableLine('שלום\n中文')).toBe('שלום 中文');
  });
});
