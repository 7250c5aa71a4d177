/**
 * The ports Notify reads, as the composition root hands them in: the users area's directory, the
 * preference book, the templates area's renderer and the unsubscribe links.
 */
import type { PreferenceBook } from '../users/preferences/types';
import type { TemplateRenderer } from '../templates/types';
import type { UserDirectory } from '../users/types';
import type { UnsubscribeHeaders } from './fan-out';

/** The ports the notify area reads. */
export interface NotifyPorts {
  directory: Pick<
    UserDirectory,
    'getUser' | 'findUser' | 'findUsers' | 'listTopicSubscribers' | 'eraseIfDeleted'
  >;
  preferences: Pick<PreferenceBook, 'isEnabled'>;
  renderer: TemplateRenderer;
  unsubscribeHeaders: UnsubscribeHeaders;
}
