import { InMemoryDeliveryStore } from '../../../services/notification/delivery/memory-store';
import { describeDeliveryContract } from './delivery-contract';

describeDeliveryContract('InMemoryDeliveryStore', async () => ({
  store: new InMemoryDeliveryStore(),
  close: async () => {},
}));
