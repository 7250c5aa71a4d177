import { InMemoryDeliveryStore } from '../../../services/notification/delivery/memory-store';
import { describeDeliveryEraseUser } from './delivery-erase-contract';
import { InMemoryNotificationStore } from '../../../services/notification/notify/memory-store';
import { describeNotificationStoreContract } from './store-contract';

describeNotificationStoreContract('InMemoryNotificationStore', async () => ({
  store: new InMemoryNotificationStore(),
  close: async () => undefined,
}));

describeDeliveryEraseUser('InMemoryDeliveryStore', async () => new InMemoryDeliveryStore());
