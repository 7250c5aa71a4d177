/**
 * What differs from the defaults: a service logs these keys at start (info), and the whole
 * configuration only at debug, so the start line says what the operator chose, not 2,500 characters
 * of defaults.
 */

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The parts of `actual` that differ from `defaults`: objects are compared key by key (nested objects
 * recursively), anything else (arrays included: a list is one choice) by value. Keys only in
 * `actual` are kept whole; keys only in `defaults` are left out. Returns `{}` when nothing differs.
 */
export function differingKeys(actual: unknown, defaults: unknown): Record<string, unknown> {
  if (!isPlainObject(actual)) return {};
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(actual)) {
    const base = isPlainObject(defaults) ? defaults[key] : undefined;
    if (isPlainObject(value) && isPlainObject(base)) {
      const nested = differingKeys(value, base);
      if (Object.keys(nested).length > 0) out[key] = nested;
    } else if (JSON.stringify(value) !== JSON.stringify(base)) {
      out[key] = value;
    }
  }
  return out;
}
