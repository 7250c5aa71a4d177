/**
 * The inbox config record (`notification.inbox`): its one definition is the schema in ../config.ts;
 * the inbox takes it as a plain, already validated object.
 */
import { InboxConfigSchema, type InboxConfig } from '../config';

export type { InboxConfig };

/** The defaults of InboxConfig, as the schema fills them. */
export const DEFAULT_INBOX_CONFIG: Readonly<InboxConfig> = Object.freeze(InboxConfigSchema.parse({}));
