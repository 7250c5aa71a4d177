/**
 * Locales and time zones of a render: canonical BCP 47 tags (`Intl.getCanonicalLocales`), the
 * fallback chain `es-MX` -> `es` -> the default locale, and the IANA zone check.
 */
import { InvalidArgumentError } from '../../../shared/errors';
import { resolveTimeZone } from '../../../shared/time/zone';

/** Longest locale tag accepted (BCP 47 tags in use are far shorter). */
export const MAX_LOCALE_LENGTH = 64;

/** Tags already canonicalised (every render canonicalises the recipient's and the default locale). */
const canonical = new Map<string, string>();
const MAX_CACHED = 1000;

/** The canonical form of a BCP 47 tag (`es-mx` -> `es-MX`); InvalidArgumentError when it is not one. */
export function canonicalLocale(tag: string, field = 'locale'): string {
  const known = canonical.get(tag);
  if (known) return known;
  if (tag.length > MAX_LOCALE_LENGTH) {
    throw new InvalidArgumentError(`${field} is longer than ${MAX_LOCALE_LENGTH} characters`, field);
  }
  try {
    const [found] = Intl.getCanonicalLocales(tag);
    if (found) {
      if (canonical.size >= MAX_CACHED) canonical.clear();
      canonical.set(tag, found);
      return found;
    }
  } catch {
    // RangeError: not a well-formed tag
  }
  throw new InvalidArgumentError(`${field} is not a BCP 47 language tag (like es-MX or en)`, field);
}

/**
 * The locales a render tries, most specific first: the tag and each shorter prefix of it
 * (`zh-Hant-TW` -> `zh-Hant` -> `zh`), then the default locale and its prefixes. No duplicates.
 */
export function fallbackChain(locale: string, defaultLocale: string): string[] {
  const chain: string[] = [];
  const add = (tag: string) => {
    const parts = tag.split('-');
    for (let n = parts.length; n >= 1; n--) {
      const candidate = parts.slice(0, n).join('-');
      if (!chain.includes(candidate)) chain.push(candidate);
    }
  };
  if (locale !== '') add(canonicalLocale(locale));
  add(canonicalLocale(defaultLocale, 'notify.default_locale'));
  return chain;
}

/** The IANA zone to format dates in ('' = UTC); InvalidArgumentError when Intl does not know it. */
export function checkTimeZone(zone: string, field = 'time_zone'): string {
  if (zone === '') return 'UTC';
  // The one zone check (shared/time/zone.ts: its formatter cache is bounded).
  const resolved = zone.length > 64 ? undefined : resolveTimeZone(zone);
  if (resolved === undefined) {
    throw new InvalidArgumentError(`${field} is not an IANA time zone (like Europe/Madrid)`, field);
  }
  return resolved;
}
