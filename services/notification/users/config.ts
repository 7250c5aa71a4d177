/**
 * The users section (`notification.users`): where the user directory keeps its rows and the bounds of
 * what one user may hold. Its home is beside the users area; the service's root config (../config.ts)
 * composes it.
 */
import { z } from 'zod';

import { positiveInt } from '../../../shared/config';

/** The user directory's store and limits. */
export const UsersConfigSchema = z
  .strictObject({
    /**
     * `database` (PostgreSQL / PGlite) or `memory` (tests, throwaway runs). Unset: the same as
     * `delivery.store_backend` (the users live beside the delivery records and the suppression list).
     */
    store_backend: z.enum(['database', 'memory']).optional(),
    /** Longest user id, in characters (code points). */
    max_user_id_length: positiveInt().max(128).default(128),
    /** Most email addresses one user may have (UpsertUser beyond: INVALID_ARGUMENT). */
    max_emails: positiveInt().default(10),
    /** Most phone numbers one user may have (UpsertUser beyond: INVALID_ARGUMENT). */
    max_phones: positiveInt().default(10),
    /**
     * Most push devices one user keeps; registering one more removes the user's oldest registration
     * (a reinstalled app leaves dead tokens behind; the newest device is the one in use).
     */
    max_devices: positiveInt().default(50),
    /** Largest `attributes` object, as UTF-8 JSON bytes. */
    max_attributes_bytes: positiveInt().default(16384),
    /** Page size of ListTopicSubscribers when none is asked for. */
    default_page_size: positiveInt().default(100),
    /** Largest page of ListTopicSubscribers; a larger request is capped. */
    max_page_size: positiveInt().default(1000),
    /** Users the memory store holds at most (beyond: RESOURCE_EXHAUSTED). */
    memory_max_users: positiveInt().default(100_000),
    /** Topic memberships the memory store holds at most (beyond: RESOURCE_EXHAUSTED). */
    memory_max_memberships: positiveInt().default(1_000_000),
  })
  .refine((c) => c.default_page_size <= c.max_page_size, {
    message: 'default_page_size must not exceed max_page_size',
    path: ['default_page_size'],
  })
  .prefault({});

/** The users section, validated. */
export type UsersConfig = z.infer<typeof UsersConfigSchema>;

/** The defaults of UsersConfig, as the schema fills them. */
export const DEFAULT_USERS_CONFIG: Readonly<UsersConfig> = Object.freeze(UsersConfigSchema.parse({}));
