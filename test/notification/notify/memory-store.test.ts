import { InMemoryNotificationStore } from '../../../services/notification/notify/memory-store';
import { describeNotificationStoreContract } from './store-contract';

describeNotificationStoreContract('InMemoryNotificationStore', async () => ({
  store: new InMemoryNotificationStore(),
  close: async () => undefined,
}));
