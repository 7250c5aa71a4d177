/**
 * InMemorySuppressionStore: the `memory` store backend of the suppression list, for tests and
 * throwaway runs. Bounded: at `maxEntries` a new entry is refused with ResourceExhaustedError rather
 * than evicting an old one, because forgetting an entry means contacting someone who opted out.
 */
import { ResourceExhaustedError } from '../../../shared/errors';
import type { Channel } from './driver';
import type {
  SuppressionEntry,
  SuppressionPage,
  SuppressionPageQuery,
  SuppressionReason,
  SuppressionStore,
} from './suppression';

/** Default cap of the memory store (`delivery.suppression.memory_max_entries`). */
export const DEFAULT_MEMORY_MAX_SUPPRESSIONS = 100_000;

function newestFirst(a: { createdAt: Date; id: string }, b: { createdAt: Date; id: string }): number {
  const t = b.createdAt.getTime() - a.createdAt.getTime();
  if (t !== 0) return t;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/** The in-memory SuppressionStore. */
export class InMemorySuppressionStore implements SuppressionStore {
  readonly backend = 'memory' as const;
  /** `${channel}\n${recipient}` -> entry. */
  private readonly entries = new Map<string, SuppressionEntry>();

  constructor(private readonly maxEntries = DEFAULT_MEMORY_MAX_SUPPRESSIONS) {}

  /** Entries held now. */
  get size(): number {
    return this.entries.size;
  }

  async add(entry: SuppressionEntry): Promise<{ entry: SuppressionEntry; created: boolean }> {
    const key = `${entry.channel}\n${entry.recipient}`;
    const existing = this.entries.get(key);
    if (existing) return { entry: { ...existing }, created: false };
    if (this.entries.size >= this.maxEntries) {
      throw new ResourceExhaustedError(
        `the suppression list holds its maximum of ${this.maxEntries} entries (memory store)`,
      );
    }
    this.entries.set(key, { ...entry });
    return { entry: { ...entry }, created: true };
  }

  async remove(
    channel: Channel,
    recipient: string,
    keepReasons: readonly SuppressionReason[] = [],
  ): Promise<boolean> {
    const key = `${channel}\n${recipient}`;
    const entry = this.entries.get(key);
    if (!entry || keepReasons.includes(entry.reason)) return false;
    return this.entries.delete(key);
  }

  async findSuppressed(channel: Channel, recipients: readonly string[]): Promise<Set<string>> {
    return new Set(recipients.filter((r) => this.entries.has(`${channel}\n${r}`)));
  }

  async reasonsOf(channel: Channel, recipients: readonly string[]): Promise<Map<string, SuppressionReason>> {
    const found = new Map<string, SuppressionReason>();
    for (const r of recipients) {
      const entry = this.entries.get(`${channel}\n${r}`);
      if (entry) found.set(r, entry.reason);
    }
    return found;
  }

  async list(query: SuppressionPageQuery): Promise<SuppressionPage> {
    const after = query.after
      ? { createdAt: new Date(query.after.createdAt), id: query.after.id }
      : undefined;
    const matching = [...this.entries.values()]
      .filter(
        (e) =>
          (query.channel === undefined || e.channel === query.channel) &&
          (after === undefined || newestFirst(after, e) < 0),
      )
      .sort(newestFirst);
    const page = matching.slice(0, query.limit);
    const last = page[page.length - 1];
    return {
      entries: page.map((e) => ({ ...e })),
      nextKey:
        matching.length > query.limit && last
          ? { createdAt: last.createdAt.toISOString(), id: last.id }
          : null,
    };
  }
}
