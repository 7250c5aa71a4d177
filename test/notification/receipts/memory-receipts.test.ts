import { InMemoryDeliveryStore } from '../../../services/notification/delivery/memory-store';
import { describeReceiptContract } from './receipt-contract';

describeReceiptContract('InMemoryDeliveryStore', async () => ({
  store: new InMemoryDeliveryStore(),
  close: async () => {},
}));
