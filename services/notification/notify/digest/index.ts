/**
 * Digests (issue 26): the DigestBook in memory or in the database, and `createDigestBook` for the
 * composition root. The runner that claims due digests, renders `<category>.digest` and sends it is
 * the notify area's one runner of due work (`../schedule/`).
 */
import type { Knex } from 'knex';
import type { Clock } from '../../../../shared/runtime/clock';
import type { NotifyConfig } from '../config';
import type { DueDigest } from '../timing';
import type { DigestStore } from './store';
import { DatabaseDigestBook } from './database-book';
import { InMemoryDigestBook } from './memory-book';

export { DatabaseDigestBook } from './database-book';
export { InMemoryDigestBook } from './memory-book';
export type { DigestStore } from './store';
export {
  MAX_DIGEST_DATA_BYTES,
  MAX_EVENT_DATA_BYTES,
  MAX_STORED_KEY_CHARS,
  MEMORY_FINISHED_DIGESTS,
} from './rules';
export { placeEvent, windowOf, type DigestWindow, type Placement } from './window';

/** What the factory reads of the service config. */
export interface DigestBookConfig {
  notify: Pick<NotifyConfig, 'categories'>;
  delivery: { store_backend: 'memory' | 'database' };
}

/**
 * The digest book, in the store backend of the delivery records (as the notifications): the memory
 * book with `delivery.store_backend: memory` (on `clock`), else the database book on `storage`
 * (whose clock is the database's).
 */
export function createDigestBook(
  config: DigestBookConfig,
  storage?: { knex: Knex },
  clock?: Clock,
): DigestStore {
  const categories = config.notify.categories;
  if (config.delivery.store_backend === 'memory') return new InMemoryDigestBook({ categories, clock });
  if (!storage) throw new Error('delivery.store_backend is database but no database is open for the digests');
  return new DatabaseDigestBook({ knex: storage.knex, categories });
}

/**
 * The data a digest template renders with (category `<name>.digest`): `data.events`, each event's
 * own data oldest first, and `data.count` ("{{ data.count }} new comments").
 */
export function digestTemplateData(digest: Pick<DueDigest, 'events'>): {
  events: Record<string, unknown>[];
  count: number;
} {
  return { events: digest.events.map((e) => e.data), count: digest.events.length };
}
