/** Helpers shared by the inbox tests. */
import { randomUUID } from 'node:crypto';
import type { InboxConfig } from '../../../services/notification/inbox/config';
import { DEFAULT_INBOX_CONFIG } from '../../../services/notification/inbox/config';
import { InboxHub, type InboxHubOptions } from '../../../services/notification/inbox/inbox-hub';
import { InboxService } from '../../../services/notification/inbox/inbox-service';
import type { InboxStoreProtocol } from '../../../services/notification/inbox/store';

/** A unique user id, so tests sharing a database never see each other's rows. */
export function newUser(prefix = 'user'): string {
  return `${prefix}-${randomUUID()}`;
}

export { ManualClock } from '../../support/manual-clock';
import type { Clock } from '../../../shared/runtime/clock';

/** A service and hub over `store`; stop the hub when done. */
export function buildService(
  store: InboxStoreProtocol,
  overrides: Partial<InboxConfig> = {},
  clock?: Clock,
  hubOptions: Partial<InboxHubOptions> = {},
): { service: InboxService; hub: InboxHub; config: InboxConfig } {
  const config = { ...DEFAULT_INBOX_CONFIG, ...overrides };
  const hub = new InboxHub(store, {
    bufferSize: config.watch_buffer_size,
    maxWatchers: config.max_watchers,
    maxWatchersPerUser: config.max_watchers_per_user,
    stallMs: config.watch_stall_seconds * 1000,
    ...hubOptions,
  });
  const service = new InboxService({ store, hub, config, clock });
  return { service, hub, config };
}

export { waitFor } from '../../support/wait';

/** Takes the next `n` events from an iterator (the stream tests' one helper). */
export { take } from '../../shared/streams/support';

/**
 * PGlite loads node built-ins with dynamic import(), which jest's VM sandbox only allows when node
 * runs with --experimental-vm-modules; without it the worker dies on an unhandled rejection. Fail
 * with the fix instead.
 */
export function requireVmModules(): void {
  const flags = `${process.env.NODE_OPTIONS ?? ''} ${process.execArgv.join(' ')}`;
  if (!flags.includes('--experimental-vm-modules')) {
    throw new Error(
      'PGlite tests need NODE_OPTIONS=--experimental-vm-modules (see package.json test scripts)',
    );
  }
}
