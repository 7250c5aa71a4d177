/**
 * The one page-size rule of every list RPC and list route.
 *
 * A list has a default and a maximum page size. An RPC's `page_size` of 0 (unset, in proto3) means
 * the default; a size above the maximum is capped, not refused, so a client asking for "everything"
 * gets full pages and walks them by token; a negative or fractional size is INVALID_ARGUMENT. A
 * route's `limit` query parameter is absent for the default, and otherwise must be a whole number
 * from 1 to the maximum (INVALID_ARGUMENT otherwise): the admin API's callers are tools that send
 * what they mean.
 */
import { InvalidArgumentError } from '../errors';

/** The page sizes of one list. */
export interface PageSizeLimits {
  /** The size of a page when none is asked for (at least 1, at most `max`). */
  default: number;
  /** The largest page. */
  max: number;
}

function check(limits: PageSizeLimits): void {
  const { default: def, max } = limits;
  if (!(Number.isInteger(def) && Number.isInteger(max) && def >= 1 && def <= max))
    throw new RangeError(`page sizes need 1 <= default <= max (got ${def} and ${max})`);
}

/** The page size of an RPC's `page_size`: 0 or absent is the default, above the maximum is capped. */
export function pageSize(requested: number | undefined, limits: PageSizeLimits): number {
  check(limits);
  if (requested === undefined || requested === 0) return limits.default;
  if (!Number.isInteger(requested) || requested < 0) {
    throw new InvalidArgumentError('page_size must be a non-negative integer', 'page_size');
  }
  return Math.min(requested, limits.max);
}

/** The page size of a route's `limit` query parameter: absent is the default, else 1 to the maximum. */
export function pageSizeParam(raw: string | undefined, limits: PageSizeLimits): number {
  check(limits);
  if (raw === undefined) return limits.default;
  const limit = /^[0-9]{1,9}$/.test(raw) ? Number(raw) : NaN;
  if (!(limit >= 1 && limit <= limits.max)) {
    throw new InvalidArgumentError(`limit must be an integer from 1 to ${limits.max}`, 'limit');
  }
  return limit;
}
