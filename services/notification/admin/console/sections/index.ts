/**
 * The console's sections and what they read: the composition root (app.ts) hands the domain
 * services over once, and each section takes what it needs. One module per section beside this one.
 */
import type { Logger } from '../../../../../shared/logging/logger';
import type { BackendRegistry, RegisteredDriver } from '../../../channels/backend-registry';
import type { DeliveryPipeline, DeliveryWatchHub, Suppressions } from '../../../delivery';
import type { InboxServiceContract } from '../../../inbox/types';
import type { CategoryConfig } from '../../../notify/config';
import type { Notifier } from '../../../notify/notifier';
import type { Templates } from '../../../templates';
import type { UserDirectoryService } from '../../../users';
import type { PreferenceBook } from '../../../users/preferences/types';
import type { ConsoleSection } from '../console-gateway';
import { activitySection } from './activity';
import { backendsSection } from './backends';
import { suppressionsSection } from './suppressions';
import { templatesSection } from './templates';
import { usersSection } from './users';

/** The domain services the console reads and drives (the same objects the RPCs use). */
export interface ConsoleSectionDeps {
  logger: Logger;
  deliveries: DeliveryPipeline;
  deliveryWatch: DeliveryWatchHub;
  suppressions: Suppressions;
  notifier: Notifier;
  users: UserDirectoryService;
  preferences: PreferenceBook;
  inbox: InboxServiceContract;
  templates: Templates;
  /** Every channel's backend registry (email, sms, push). */
  registries: readonly BackendRegistry<RegisteredDriver>[];
  categories: readonly CategoryConfig[];
  /** The largest page a list route answers (`inbox.max_page_size`). */
  maxPageSize: number;
  /** Aborted when the server starts shutting down: open console streams end. */
  shutdownSignal?: AbortSignal;
}

/** Every section of the console, in tab order. */
export function consoleSections(deps: ConsoleSectionDeps): ConsoleSection[] {
  return [
    activitySection(deps),
    suppressionsSection(deps),
    templatesSection(deps),
    usersSection(deps),
    backendsSection(deps),
  ];
}
