/**
 * The memory store's records: the table of DeliveryRecords with its idempotency-key index, and the
 * copies in and out (the payload cloned once on the way in and frozen, so copies out share it
 * read-only instead of cloning it per read, claim and completion). Used by InMemoryDeliveryStore and
 * the memory-* files it composes.
 */
import type { DeliveryRecord } from './types';

/**
 * Payloads held frozen (plain objects, arrays and primitives all the way down): a record's copy shares
 * such a payload instead of cloning it on every read, claim and completion, since nobody can change it.
 */
const frozenPayloads = new WeakSet<object>();

const MAX_FROZEN_DEPTH = 32;
/** Marks that a value is not plain data (bailing out of `frozenCopy`). */
const NOT_PLAIN = Symbol('not plain');

/**
 * A deep copy of `value`, frozen, when it is plain JSON-like data (objects of the plain prototype,
 * arrays, primitives), else NOT_PLAIN (a Date, bytes, a Map: such a payload is cloned per copy
 * instead). One pass, several times cheaper than structuredClone for the small objects payloads are.
 */
function frozenCopy(value: unknown, depth = 0): unknown {
  if (typeof value !== 'object' || value === null) return typeof value === 'function' ? NOT_PLAIN : value;
  // Deeper than any payload we build: a cycle, or a shape structuredClone is left to copy.
  if (depth > MAX_FROZEN_DEPTH) return NOT_PLAIN;
  let out: unknown[] | Record<string, unknown>;
  if (Array.isArray(value)) {
    const list: unknown[] = [];
    for (const item of value) {
      const c = frozenCopy(item, depth + 1);
      if (c === NOT_PLAIN) return NOT_PLAIN;
      list.push(c);
    }
    out = list;
  } else if (isPlainObject(value)) {
    const record: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      const c = frozenCopy((value as Record<string, unknown>)[key], depth + 1);
      if (c === NOT_PLAIN) return NOT_PLAIN;
      record[key] = c;
    }
    out = record;
  } else return NOT_PLAIN;
  frozenPayloads.add(Object.freeze(out));
  return out;
}

/**
 * An object of the plain prototype, of any realm (structuredClone's objects may come from another one
 * than this module's `Object.prototype`, as under jest), or of none.
 */
function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as { constructor?: unknown } | null;
  if (proto === null) return true;
  return (
    Object.getPrototypeOf(proto) === null &&
    typeof proto.constructor === 'function' &&
    proto.constructor.name === 'Object'
  );
}

/** The stored form of a caller's payload: a private copy, frozen when it is plain data. */
export function ownPayload(payload: unknown): unknown {
  const own = frozenCopy(payload);
  return own === NOT_PLAIN ? structuredClone(payload) : own;
}

function copyPayload(payload: unknown): unknown {
  if (typeof payload !== 'object' || payload === null || frozenPayloads.has(payload)) return payload;
  return structuredClone(payload);
}

/** A caller's copy of a stored record: nothing of it is shared but a frozen payload. */
export function copy(record: DeliveryRecord): DeliveryRecord {
  return {
    ...record,
    payload: copyPayload(record.payload),
    attempts: record.attempts.map((a) => ({ ...a })),
    suppressedRecipients: [...record.suppressedRecipients],
    receipts: record.receipts.map((r) => ({ ...r })),
  };
}

/** The list order: newest first, ties by id descending (as the database's keyset). */
export function newestFirst(a: { createdAt: Date; id: string }, b: { createdAt: Date; id: string }): number {
  const t = b.createdAt.getTime() - a.createdAt.getTime();
  if (t !== 0) return t;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/** The records by id and the idempotency index (`${scope}\n${key}` -> id). */
export class MemoryRecords {
  readonly byId = new Map<string, DeliveryRecord>();
  private readonly keys = new Map<string, string>();

  get(id: string): DeliveryRecord | undefined {
    return this.byId.get(id);
  }

  /** The record an idempotency key of a scope names, if it is held. */
  byKey(scope: string, key: string): DeliveryRecord | undefined {
    const id = this.keys.get(`${scope}\n${key}`);
    return id === undefined ? undefined : this.byId.get(id);
  }

  add(record: DeliveryRecord): void {
    this.byId.set(record.id, record);
    if (record.idempotencyKey !== null) this.keys.set(`${record.scope}\n${record.idempotencyKey}`, record.id);
  }

  delete(record: DeliveryRecord): void {
    this.byId.delete(record.id);
    if (record.idempotencyKey !== null) this.keys.delete(`${record.scope}\n${record.idempotencyKey}`);
  }
}
