import { InMemoryTemplateStore } from '../../../services/notification/templates/memory-store';
import { describeTemplateStoreContract } from './store-contract';

describeTemplateStoreContract('InMemoryTemplateStore', async () => ({
  store: new InMemoryTemplateStore(),
  close: async () => undefined,
}));
