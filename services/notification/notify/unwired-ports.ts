/**
 * PLACEHOLDERS of the ports Notify reads, used by the composition root until the users,
 * preferences and templates areas are merged (the lead replaces them with the real ones). They are
 * honest about it: the directory knows no user (Notify answers NOT_FOUND), no template exists
 * (NO_TEMPLATE), every channel is on, and no unsubscribe link is made.
 */
import { NotFoundError } from '../../../shared/errors';
import type { PreferenceBook } from '../preferences/types';
import type { TemplateRenderer } from '../templates/types';
import type { UserDirectory } from '../users/types';
import type { UnsubscribeHeaders } from './fan-out';

/** The ports the notify area reads. */
export interface NotifyPorts {
  directory: Pick<UserDirectory, 'getUser' | 'findUser' | 'listTopicSubscribers'>;
  preferences: Pick<PreferenceBook, 'isEnabled'>;
  renderer: TemplateRenderer;
  unsubscribeHeaders: UnsubscribeHeaders;
}

/** The placeholders (see the file comment). */
export const UNWIRED_NOTIFY_PORTS: NotifyPorts = {
  directory: {
    getUser: async (userId) => {
      throw new NotFoundError(`user ${userId} not found`);
    },
    findUser: async () => undefined,
    listTopicSubscribers: async () => ({ userIds: [] }),
  },
  preferences: { isEnabled: async () => true },
  renderer: { render: async () => undefined },
  unsubscribeHeaders: () => ({}),
};
