/**
 * The regexes of label matchers (silences, ListAlerts filters, inhibition rules) run on V8's
 * backtracking engine, so `safeRegex` refuses, before anything runs, the patterns whose work on a
 * failing value grows without bound: nested quantifiers, and choices one after another whose ways to
 * split a value multiply past MATCHER_LIMITS.patternPaths. No timing is asserted: what is refused is
 * refused by its shape.
 */
import { InvalidArgumentError } from '../../../shared/errors';
import { MATCHER_LIMITS, compileMatcher, safeRegex } from '../../../services/monitor/alerts/matchers';

function refusal(pattern: string): string {
  try {
    safeRegex(pattern, 'matchers');
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as InvalidArgumentError).field).toBe('matchers');
    return (err as Error).message;
  }
  throw new Error(`expected ${JSON.stringify(pattern)} to be refused`);
}

describe('safeRegex', () => {
  // Found by a black-box probe: ListAlerts with host=~"a*a*a*a*a*a*a*a*a*a*" against a 41-character
  // label held the monitor's event loop for nearly five minutes; the other two never end.
  it.each([
    ['a*a*a*a*a*a*a*a*a*a*'],
    ['.*.*.*x'],
    ['.*-.*-.*x'],
    ['[a-z]+[a-z]+[a-z]+x'],
    ['a{0,300}a{0,300}a{0,300}x'],
    ['a{2,}a{2,}a{2,}x'],
    [`${'a?'.repeat(100)}b`],
    [`${'(a|a)'.repeat(40)}x`],
    [`(?:a|b|c|d|e)${'.*'.repeat(2)}`],
  ])('refuses choices that multiply past the bound: %s', (pattern) => {
    expect(refusal(pattern)).toBe(
      'matchers: regex has too many quantifiers or alternatives one after another (catastrophic backtracking)',
    );
  });

  it.each([['(a?a?)*b'], ['(a?)+'], ['(a+)+$'], ['(a|aa)*']])(
    'refuses a quantified group that holds a quantifier or an alternation: %s',
    (pattern) => {
      expect(refusal(pattern)).toContain('a quantified group may not hold a quantifier or alternation');
    },
  );

  it('accepts the bound itself (two unbounded quantifiers and two ?) and refuses one more choice', () => {
    expect(MATCHER_LIMITS.patternPaths).toBe(4 * (MATCHER_LIMITS.valueChars + 1) ** 2);
    expect(safeRegex('.*x.*a?b?', 'matchers').test('x')).toBe(true);
    expect(safeRegex('.*(a|b)[0-9]+(c|d)', 'matchers').test('🚀ad')).toBe(false);
    refusal('.*x.*a?b?c?');
    refusal('.*(a|b|c)[0-9]+(c|d)');
    // One below: fewer choices pass.
    expect(safeRegex('.*x.*a?', 'matchers').test('xa')).toBe(true);
  });

  it.each([
    ['db-[0-9]+', 'db-12', true],
    ['.*prod.*', 'eu-prod-1', true],
    ['https?://.*', 'https://example.com/x', true],
    ['(api|web|worker)-[0-9]+', 'web-3', true],
    ['(?<env>prod|staging)-.*', 'staging-eu', true],
    ['.*?x.*?', 'axb', true],
    ['\\u{1F680}+ .*', '🚀🚀 launch', true],
    ['\\p{Script=Han}{2}', '世界', true],
    ['[א-ת]+', 'שלום', true],
    ['مرحبا.*', 'مرحبا بالعالم', true],
    ['db-[0-9]+', 'db-', false],
  ])('accepts the patterns silences are made of: %s on %s', (pattern, value, matches) => {
    expect(safeRegex(pattern, 'matchers').test(value)).toBe(matches);
  });

  it('a matcher with a refused pattern is INVALID_ARGUMENT on its field', () => {
    expect(() => compileMatcher({ name: 'host', op: '!~', value: 'a*a*a*a*' }, 'matchers')).toThrow(
      InvalidArgumentError,
    );
  });
});
