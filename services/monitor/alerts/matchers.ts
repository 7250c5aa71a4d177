/**
 * Label matchers (Alertmanager's): `name=value`, `name!=value`, `name=~regex`, `name!~regex`. They
 * select alerts in ListAlerts, silences and inhibition rules.
 *
 * Regexes are anchored (the whole value must match, as in Alertmanager) and kept safe without RE2:
 * a pattern is at most {@link MATCHER_LIMITS.patternChars} characters and may not hold what makes a
 * backtracking engine catastrophic (a quantified group that itself holds a quantifier or an
 * alternation, e.g. `(a+)+`, `(a|aa)*`, `(a?a?)*`; backreferences; lookarounds). Nor may it hold a sequence of
 * choices whose ways to split a value multiply beyond {@link MATCHER_LIMITS.patternPaths}: each
 * unbounded quantifier (`*`, `+`, `{n,}`) can take any of a value's 1024 + 1 lengths, `?` two, `{n,m}`
 * m - n + 1, a group or pattern of k alternatives k; their product bounds the paths a backtracking
 * engine walks on a failing value (found by a black-box probe: `a*a*a*a*a*a*a*a*a*a*`, ten stars,
 * kept one ListAlerts call busy for nearly five minutes on a 41-character label; `a?` a hundred times
 * then `b`, or `(a|a)` forty times, never end). The value matched is at most a context value's length
 * ({@link MATCHER_LIMITS.valueChars}), so the worst case of what is accepted is bounded: about as
 * much as `.*x.*` with two `?`, a few milliseconds.
 */
import { InvalidArgumentError } from '../../../shared/errors';
import { requireStorableText } from '../../../shared/text/cut';
import { longerThan } from '../../../shared/text/check';

/** A matcher's operator. */
export type MatchOp = '=' | '!=' | '=~' | '!~';

/** One label matcher. */
export interface LabelMatcher {
  name: string;
  op: MatchOp;
  value: string;
}

/** Bounds of matchers. */
export const MATCHER_LIMITS = {
  /** Matchers of one silence, rule side or filter. */
  matchers: 16,
  nameChars: 64,
  valueChars: 1024,
  patternChars: 256,
  /**
   * Most ways a pattern's choices can split a value (see the file comment): two unbounded
   * quantifiers and two `?`, or one unbounded quantifier and an alternation of 4,000 names.
   */
  patternPaths: 4 * 1025 * 1025,
} as const;

/** The choices of a quantifier on a value of at most `valueChars` characters. */
const UNBOUNDED = MATCHER_LIMITS.valueChars + 1;

const OPS: readonly MatchOp[] = ['=', '!=', '=~', '!~'];

/**
 * Refuses a pattern a backtracking engine could take exponential time on (see the file comment).
 * Returns the compiled, anchored regex.
 */
export function safeRegex(pattern: string, field: string): RegExp {
  if (longerThan(pattern, MATCHER_LIMITS.patternChars))
    throw new InvalidArgumentError(
      `${field}: regex is longer than ${MATCHER_LIMITS.patternChars} characters`,
      field,
    );
  if (/\\[1-9]|\\k</.test(pattern))
    throw new InvalidArgumentError(`${field}: backreferences are not allowed`, field);
  if (/\(\?<?[=!]/.test(pattern))
    throw new InvalidArgumentError(`${field}: lookarounds are not allowed`, field);
  // Walk the groups: a group holding a quantifier or an alternation must not itself be quantified.
  // Count the paths on the way: the product of every quantifier's and every alternation's choices.
  const stack: { risky: boolean; branches: number }[] = [{ risky: false, branches: 1 }];
  let paths = 1;
  const tooMany = () =>
    new InvalidArgumentError(
      `${field}: regex has too many quantifiers or alternatives one after another (catastrophic backtracking)`,
      field,
    );
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\') {
      i++;
      // `\u{1F680}`, `\p{L}`: the braces belong to the escape, they are no quantifier.
      if ('upP'.includes(pattern[i] ?? '') && pattern[i + 1] === '{') {
        const close = pattern.indexOf('}', i + 1);
        i = close === -1 ? pattern.length : close;
      }
      continue;
    }
    if (c === '[') {
      // Skip a character class (quantifiers inside it are literal).
      i++;
      if (pattern[i] === '^') i++;
      if (pattern[i] === ']') i++;
      while (i < pattern.length && pattern[i] !== ']') {
        if (pattern[i] === '\\') i++;
        i++;
      }
      continue;
    }
    if (c === '(') {
      stack.push({ risky: false, branches: 1 });
      // `(?:` and `(?<name>`: the `?` is group syntax, not a quantifier.
      if (pattern[i + 1] === '?') i++;
    } else if (c === ')') {
      const group = stack.pop();
      if (!group || stack.length === 0)
        throw new InvalidArgumentError(`${field}: unbalanced parenthesis in regex`, field);
      const next = pattern[i + 1];
      if (group.risky && (next === '*' || next === '+' || next === '?' || next === '{'))
        throw new InvalidArgumentError(
          `${field}: a quantified group may not hold a quantifier or alternation (catastrophic backtracking)`,
          field,
        );
      if (group.risky) stack[stack.length - 1]!.risky = true;
      paths *= group.branches;
    } else if (c === '|') {
      const top = stack[stack.length - 1]!;
      top.risky = true;
      top.branches++;
    } else if (c === '*' || c === '+' || c === '?' || c === '{') {
      stack[stack.length - 1]!.risky = true;
      let choices = c === '?' ? 2 : UNBOUNDED;
      if (c === '{') {
        const range = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(i));
        if (range) {
          const min = Number(range[1]);
          const max = range[2] === undefined ? min : range[3] === '' ? Infinity : Number(range[3]);
          choices = Math.min(max - min + 1, UNBOUNDED);
          i += range[0].length - 1;
        }
      }
      // A `?` after a quantifier makes it lazy: the same choices, in another order.
      if (pattern[i + 1] === '?') i++;
      paths *= Math.max(choices, 1);
    }
    if (paths > MATCHER_LIMITS.patternPaths) throw tooMany();
  }
  if (stack.length !== 1) throw new InvalidArgumentError(`${field}: unbalanced parenthesis in regex`, field);
  paths *= stack[0]!.branches;
  if (paths > MATCHER_LIMITS.patternPaths) throw tooMany();
  try {
    return new RegExp(`^(?:${pattern})$`, 'u');
  } catch {
    throw new InvalidArgumentError(`${field}: not a valid regex`, field);
  }
}

/** A checked matcher with its compiled regex. */
export interface CompiledMatcher extends LabelMatcher {
  test(labels: Readonly<Record<string, string>>): boolean;
}

/** Checks one matcher (InvalidArgumentError on `field`) and compiles it. */
export function compileMatcher(m: LabelMatcher, field: string): CompiledMatcher {
  if (!OPS.includes(m.op))
    throw new InvalidArgumentError(`${field}: unknown operator ${JSON.stringify(m.op)}`, field);
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(m.name) || m.name.length > MATCHER_LIMITS.nameChars)
    throw new InvalidArgumentError(
      `${field}: label name must be 1 to ${MATCHER_LIMITS.nameChars} letters, digits or _`,
      field,
    );
  if (longerThan(m.value, MATCHER_LIMITS.valueChars))
    throw new InvalidArgumentError(
      `${field}: value is longer than ${MATCHER_LIMITS.valueChars} characters`,
      field,
    );
  requireStorableText(m.value, field, `${field}: value`);
  const name = m.name;
  const value = m.value;
  if (m.op === '=') return { ...m, test: (l) => (l[name] ?? '') === value };
  if (m.op === '!=') return { ...m, test: (l) => (l[name] ?? '') !== value };
  const re = safeRegex(value, field);
  const positive = m.op === '=~';
  return { ...m, test: (l) => re.test(l[name] ?? '') === positive };
}

/** Checks and compiles a list of matchers (at most {@link MATCHER_LIMITS.matchers}). */
export function compileMatchers(list: readonly LabelMatcher[], field: string): CompiledMatcher[] {
  if (list.length > MATCHER_LIMITS.matchers)
    throw new InvalidArgumentError(`${field}: at most ${MATCHER_LIMITS.matchers} matchers`, field);
  return list.map((m) => compileMatcher(m, field));
}

/** True when every matcher matches (an empty list matches everything). */
export function matchesAll(
  matchers: readonly CompiledMatcher[],
  labels: Readonly<Record<string, string>>,
): boolean {
  return matchers.every((m) => m.test(labels));
}

/**
 * Parses Alertmanager's text form, `name="value"`, `name=~"re"` (quotes optional), as config writes
 * matchers. InvalidArgumentError on `field` when malformed.
 */
export function parseMatcher(text: string, field: string): LabelMatcher {
  const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*(.*?)\s*$/su.exec(text);
  if (!m)
    throw new InvalidArgumentError(`${field}: expected name=value, name!=value, name=~re or name!~re`, field);
  let value = m[3]!;
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) {
    try {
      value = JSON.parse(value) as string;
    } catch {
      throw new InvalidArgumentError(`${field}: bad quoted value`, field);
    }
  }
  return { name: m[1]!, op: m[2] as MatchOp, value };
}
