/**
 * The content hash of a delivery: what an idempotency key is compared by. Canonical JSON (object
 * keys sorted at every depth) so two equal payloads built in different key orders hash the same.
 */
import { hash } from 'node:crypto';

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort())
      out[key] = canonical((value as Record<string, unknown>)[key]);
    return out;
  }
  return value;
}

/** The canonical JSON text of a value (sorted keys; `undefined` members dropped as JSON does). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(canonical(value));
}

/** sha256 (hex) of the canonical JSON of what a delivery sends, to whom and through what. */
export function contentHash(parts: {
  channel: string;
  backend: string;
  recipient: string;
  payload: unknown;
}): string {
  // crypto.hash: one call, without the Hash object createHash builds (about half the time per send).
  return hash('sha256', canonicalJson(parts), 'hex');
}
