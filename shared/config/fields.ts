/**
 * Field builders for config schemas. Each carries its own "expected ..." wording so that a
 * ConfigError reads `retention_days: expected a positive integer, got "abc"` instead of zod's
 * generic type names.
 */
import { z } from 'zod';
import { isE164 } from '../text/e164';

function err(message: string): { error: string } {
  return { error: message };
}

/** An integer >= 1, and at most `max` when given. */
export function positiveInt(max?: number): z.ZodNumber {
  const e = err('expected a positive integer');
  const schema = z.number(e).int(e).positive(e);
  // Its own message: under the schema-wide one, 200 against a maximum of 100 read "expected a
  // positive integer, got 200".
  return max === undefined ? schema : schema.max(max, { error: `expected at most ${max}` });
}

/** An integer >= 0. */
export function nonNegativeInt(): z.ZodNumber {
  const e = err('expected an integer of 0 or more');
  return z.number(e).int(e).nonnegative(e);
}

/** A non-negative number (float allowed). */
export function nonNegativeNumber(): z.ZodNumber {
  const e = err('expected a number of 0 or more');
  return z.number(e).nonnegative(e);
}

/** A strictly positive number (float allowed). */
export function positiveNumber(): z.ZodNumber {
  const e = err('expected a number greater than 0');
  return z.number(e).positive(e);
}

/** A TCP port, 0 to 65535 (0 = let the OS pick, used by tests). */
export function port(): z.ZodNumber {
  const e = err('expected a port number between 0 and 65535');
  return z.number(e).int(e).min(0, e).max(65535, e);
}

/** A fraction between 0.0 and 1.0 inclusive (sample rates, percentiles). */
export function fraction(): z.ZodNumber {
  const e = err('expected a number between 0.0 and 1.0');
  return z.number(e).min(0, e).max(1, e);
}

/** A boolean; the env loader already turned "true"/"false"/"1"/"0" into one. */
export function bool(): z.ZodBoolean {
  return z.boolean(err('expected true or false'));
}

/** A non-empty string. */
export function nonEmptyString(): z.ZodString {
  const e = err('expected a non-empty string');
  return z.string(e).min(1, e);
}

/** An absolute http(s) URL. */
export function httpUrl(): z.ZodString {
  const e = err('expected an http:// or https:// URL');
  return z.string(e).regex(/^https?:\/\/[^\s/]+/i, e);
}

/** An e-mail address (`name@example.com`). */
export function emailAddress(): z.ZodString {
  const e = err('expected an e-mail address such as name@example.com');
  return z.string(e).regex(/^[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+$/, e);
}

/** A telephone number in international E.164 format: `+` then 2 to 15 digits, no spaces. */
export function e164(): z.ZodString {
  const e = err('expected a telephone number in international format such as +15551234567');
  return z.string(e).refine(isE164, e);
}

/** `host:port`, e.g. `localhost:50051` or `[::1]:50051`. */
export function hostPort(): z.ZodString {
  const e = err('expected host:port such as localhost:50051');
  return z.string(e).regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, e);
}

/** A backend or target name: letters, digits, `_`, `-`, `.`. */
export function itemName(): z.ZodString {
  const e = err('expected a name of letters, digits, "_", "-" or "."');
  return z.string(e).regex(/^[A-Za-z0-9_.-]+$/, e);
}

const UNIT_SECONDS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800 };
const DURATION_PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/g;
const DURATION_WHOLE = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w))+$/;

/**
 * Parses a duration to seconds: a number (already seconds), a numeric string, or units such as
 * "250ms", "30s", "5m", "1h", "1h30m", "7d". Returns undefined when the text is not a duration.
 */
export function parseDurationSeconds(value: number | string): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : undefined;
  const text = value.trim();
  if (/^\d+(?:\.\d+)?$/.test(text)) return Number(text);
  if (!DURATION_WHOLE.test(text)) return undefined;
  let total = 0;
  for (const m of text.matchAll(DURATION_PART)) total += Number(m[1]) * (UNIT_SECONDS[m[2]!] ?? 0);
  return total;
}

/**
 * A duration, written as seconds (number) or as "30s", "5m", "1h"; normalised to seconds.
 * Used where the spec says "time delta" and for intervals given in seconds.
 */
export function duration(): z.ZodType<number, number | string> {
  const message = 'expected a duration: seconds as a number, or text such as "30s", "5m", "1h"';
  return z.union([z.number(), z.string()], err(message)).transform((value, ctx) => {
    const seconds = parseDurationSeconds(value);
    if (seconds === undefined) {
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    }
    return seconds;
  });
}

/**
 * The one "names are unique" rule of a config list (`superRefine(uniqueNames('SLO'))`): each repeat
 * is an issue on its `name`, naming the entry it repeats.
 */
export function uniqueNames(what: string) {
  return (list: readonly { name: string }[], ctx: z.RefinementCtx): void => {
    const seen = new Map<string, number>();
    list.forEach((item, i) => {
      const earlier = seen.get(item.name);
      if (earlier === undefined) seen.set(item.name, i);
      else
        ctx.addIssue({
          code: 'custom',
          path: [i, 'name'],
          message: `duplicate ${what} name "${item.name}" (already used by entry [${earlier}])`,
        });
    });
  };
}

/** A list of strings; from the environment it may be JSON or comma-separated. */
export function stringList(item: z.ZodString = z.string()): z.ZodArray<z.ZodString> {
  return z.array(item, err('expected a list of strings'));
}
