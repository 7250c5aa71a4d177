import { InMemoryInboxStore } from '../../../services/notification/inbox/memory-store';
import { describeInboxContract } from './inbox-contract';

describeInboxContract('InMemoryInboxStore', async () => ({
  store: new InMemoryInboxStore(),
  close: async () => {},
}));
