/**
 * The locale filters of our Liquid: numbers, money, dates in the recipient's time zone and plurals,
 * each formatted with `Intl` for the recipient's locale. The locale and zone of a render reach the
 * filters through the render's globals under a symbol (a template cannot read or set it).
 *
 * - `{{ data.total | number }}`, `{{ data.ratio | number: 2 }}` (exactly 2 fraction digits)
 * - `{{ data.total | currency: "EUR" }}` (ISO 4217 code)
 * - `{{ data.at | date: "long" }}`, `{{ data.at | date: "medium", "short" }}` (date style, then
 *   optional time style: `short`, `medium`, `long`, `full`), or a strftime format as in standard
 *   Liquid (`date: "%Y-%m-%d %H:%M"`); the value is an ISO 8601 string, epoch milliseconds or a Date
 * - `{{ data.count | plural: "one: # message", "other: # messages" }}`: each argument is
 *   `<form>: <text>` with `<form>` one of `zero`, `one`, `two`, `few`, `many`, `other` (the CLDR
 *   plural forms of `Intl.PluralRules`) or `=<n>` for an exact number; `#` is the number, formatted
 *   for the locale. `other` is required.
 */
import { type Context, filters as liquidFilters } from 'liquidjs';
import { InvalidArgumentError } from '../../../shared/errors';

/** What a filter sees as `this` (LiquidJS's FilterImpl, of which we read the context). */
interface FilterImpl {
  context: Context;
}

/** Where a render's locale and zone live in the render globals. */
export const RENDER_ENV = Symbol('templates.render-env');

/** The locale and time zone of one render. */
export interface RenderEnv {
  locale: string;
  timeZone: string;
}

const STYLES = ['short', 'medium', 'long', 'full'] as const;
type Style = (typeof STYLES)[number];
const PLURAL_FORMS = ['zero', 'one', 'two', 'few', 'many', 'other'];

/** Formatters are costly to build (tens of µs): kept per (kind, locale, zone, options), bounded. */
const MAX_FORMATTERS = 2000;
const formatters = new Map<string, Intl.NumberFormat | Intl.DateTimeFormat | Intl.PluralRules>();

function cached<T extends Intl.NumberFormat | Intl.DateTimeFormat | Intl.PluralRules>(
  key: string,
  make: () => T,
): T {
  let f = formatters.get(key) as T | undefined;
  if (!f) {
    f = make();
    if (formatters.size >= MAX_FORMATTERS) formatters.delete(formatters.keys().next().value as string);
    formatters.set(key, f);
  }
  return f;
}

function env(impl: FilterImpl): RenderEnv {
  const found = (impl.context.globals as Record<symbol, RenderEnv | undefined>)[RENDER_ENV];
  return found ?? { locale: 'en', timeZone: 'UTC' };
}

function bad(filter: string, message: string): InvalidArgumentError {
  return new InvalidArgumentError(`the ${filter} filter ${message}`, 'data');
}

function toNumber(filter: string, value: unknown): number {
  const n =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && value.trim() !== ''
        ? Number(value)
        : NaN;
  if (!Number.isFinite(n)) throw bad(filter, 'needs a number');
  return n;
}

function numberFormat(locale: string, digits?: unknown): Intl.NumberFormat {
  if (digits === undefined) return cached(`n|${locale}`, () => new Intl.NumberFormat(locale));
  const d = Number(digits);
  if (!Number.isInteger(d) || d < 0 || d > 20)
    throw bad('number', 'takes a count of fraction digits from 0 to 20');
  return cached(
    `n|${locale}|${d}`,
    () => new Intl.NumberFormat(locale, { minimumFractionDigits: d, maximumFractionDigits: d }),
  );
}

function toDate(value: unknown): Date {
  const d =
    value instanceof Date
      ? value
      : typeof value === 'number'
        ? new Date(value)
        : typeof value === 'string' && value.trim() !== ''
          ? new Date(/^-?\d+$/.test(value) ? Number(value) : value)
          : new Date(NaN);
  if (Number.isNaN(d.getTime())) throw bad('date', 'needs an ISO 8601 date, epoch milliseconds or a date');
  return d;
}

function style(arg: unknown, what: string): Style {
  if (typeof arg === 'string' && (STYLES as readonly string[]).includes(arg)) return arg as Style;
  throw bad('date', `takes a ${what} style (short, medium, long or full) or a strftime format`);
}

/** The filters, by name, to register on an engine. */
export const LOCALE_FILTERS: Record<
  string,
  (this: FilterImpl, value: unknown, ...args: unknown[]) => string
> = {
  number(value, digits?) {
    return numberFormat(env(this).locale, digits).format(toNumber('number', value));
  },
  currency(value, code?) {
    if (typeof code !== 'string' || !/^[A-Za-z]{3}$/.test(code)) {
      throw bad('currency', 'takes an ISO 4217 currency code, like "EUR"');
    }
    const { locale } = env(this);
    const upper = code.toUpperCase();
    return cached(
      `c|${locale}|${upper}`,
      () => new Intl.NumberFormat(locale, { style: 'currency', currency: upper }),
    ).format(toNumber('currency', value));
  },
  date(value, dateStyle = 'medium', timeStyle?) {
    const { locale, timeZone } = env(this);
    if (typeof dateStyle === 'string' && dateStyle.includes('%')) {
      // A strftime format (standard Liquid): LiquidJS's own date filter, in the recipient's zone
      // (names of months and days in English: for the recipient's language use a style).
      const strftime = liquidFilters.date as unknown as (this: FilterImpl, ...args: unknown[]) => string;
      return strftime.call(this, toDate(value), dateStyle, timeZone);
    }
    const ds = style(dateStyle, 'date');
    const ts = timeStyle === undefined ? undefined : style(timeStyle, 'time');
    return cached(
      `d|${locale}|${timeZone}|${ds}|${ts ?? ''}`,
      () => new Intl.DateTimeFormat(locale, { dateStyle: ds, timeStyle: ts, timeZone }),
    ).format(toDate(value));
  },
  plural(value, ...forms) {
    const n = toNumber('plural', value);
    const { locale } = env(this);
    const byForm = new Map<string, string>();
    for (const f of forms) {
      const m = typeof f === 'string' ? /^\s*(=-?\d+(?:\.\d+)?|[a-z]+)\s*:\s?([\s\S]*)$/.exec(f) : null;
      if (!m || (!m[1]!.startsWith('=') && !PLURAL_FORMS.includes(m[1]!))) {
        throw bad('plural', 'takes forms like "one: # message" (zero, one, two, few, many, other or =N)');
      }
      byForm.set(m[1]!.startsWith('=') ? `=${Number(m[1]!.slice(1))}` : m[1]!, m[2]!);
    }
    if (!byForm.has('other')) throw bad('plural', 'needs an "other: ..." form');
    const form = cached(`p|${locale}`, () => new Intl.PluralRules(locale)).select(n);
    const text = byForm.get(`=${n}`) ?? byForm.get(form) ?? byForm.get('other')!;
    return text.replace(/#/g, numberFormat(locale).format(n));
  },
};
