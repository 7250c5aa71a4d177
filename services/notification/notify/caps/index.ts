/**
 * Frequency caps (issue 26): the `CapLedger` port of `../timing.ts` over `notify.caps`, in memory or
 * in the service's database. Import from here; the composition root calls `createCapLedger`.
 */
import type { Logger } from '../../../../shared/logging/logger';
import type { Clock } from '../../../../shared/runtime/clock';
import type { Storage } from '../../../../shared/storage/database';
import type { NotifyConfig } from '../config';
import type { CapLedger } from '../timing';
import { DatabaseCapLedger } from './database-ledger';
import { MemoryCapLedger } from './memory-ledger';

export { DatabaseCapLedger, type DatabaseCapLedgerOptions } from './database-ledger';
export { DEFAULT_CAP_MEMORY_MAX_USERS, MemoryCapLedger, type MemoryCapLedgerOptions } from './memory-ledger';
export { capText } from './rules';

/**
 * The cap ledger of `notify.caps`: on the service's database when `storage` is given (the
 * composition root passes it when the delivery records are in the database; the database's clock
 * decides, across replicas), otherwise in memory, reading `clock` (default: the system clock).
 */
export function createCapLedger(
  config: Pick<NotifyConfig, 'caps'>,
  storage?: Pick<Storage, 'knex'>,
  clock?: Clock,
  logger?: Logger,
): CapLedger {
  if (storage) return new DatabaseCapLedger(storage.knex, { caps: config.caps });
  return new MemoryCapLedger({ caps: config.caps, clock, logger });
}
