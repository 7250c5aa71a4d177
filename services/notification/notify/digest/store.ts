/** The DigestBook both digest stores implement, with the purge of finished digests. */
import type { DigestBook } from '../timing';

/** A DigestBook with its retention. */
export interface DigestStore extends DigestBook {
  /**
   * Deletes up to `limit` digests sent or cancelled before `before` (oldest first), with their
   * events; how many. Open and taken digests are never purged. For the notifications' retention job.
   */
  purgeFinished(before: Date, limit: number): Promise<number>;
}
