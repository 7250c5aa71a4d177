/** The escalation rules on the memory stores. */
import { InMemoryAlertStore } from '../../../services/monitor/alerts/memory-store';
import { MemoryEscalationStore } from '../../../services/monitor/oncall/escalation-store';
import { describeEscalationContract } from './escalation-contract';

describeEscalationContract('memory', async () => ({
  alerts: new InMemoryAlertStore(),
  store: new MemoryEscalationStore(),
}));
