/**
 * Bad input (issue 16): random and boundary messages to every RPC of the notification service
 * (NotificationService, InboxService: enumerated from test/reliability/surfaces.ts, so a new RPC is
 * fuzzed without anyone adding it), over gRPC and Connect, with every provider backend behind a local
 * stand-in. No crash, no INTERNAL, every rejection with a reason; cancelled WatchInbox streams are
 * released. The rules and run counts are in ./rpc-fuzzer.ts.
 */
import { NOTIFICATION_SERVICES, methodsOf } from '../surfaces';
import { exactly, recordFigures, SOAK } from '../results';
import { healthCheck, healthClient } from '../../support/grpc-clients';
import { waitFor } from '../../support/wait';
import { fuzzServices, serverInternalCount, STREAM_RUNS } from './rpc-fuzzer';
import { fuzzSeed } from './tally';
import { startNotificationTarget } from './targets';

test(
  'every notification RPC, fuzzed over gRPC and Connect: no crash, no INTERNAL, every rejection with a reason',
  async () => {
    const seed = fuzzSeed();
    // The seed replays the run: FUZZ_SEED=<seed> npx jest test/reliability/fuzz/rpc-notification
    console.log(`notification rpc fuzz seed ${seed} (replay with FUZZ_SEED=${seed})`);
    const target = await startNotificationTarget();
    const { n } = target;
    try {
      const tally = await fuzzServices(NOTIFICATION_SERVICES, n.grpcAddress, n.baseUrl, seed);
      // Cancelled streams are released: no watch outlives its caller.
      await waitFor(() => n.app.inboxHub.watcherCount === 0, 'fuzzed WatchInbox streams to close');
      const health = healthClient(n.grpcAddress);
      const serving = await healthCheck(health, '').finally(() => health.close());
      const serverInternal = serverInternalCount(await n.app.registry.metrics());
      recordFigures({
        section: 'fuzz-rpc-notification',
        title: `Bad input: every notification RPC (${methodsOf(NOTIFICATION_SERVICES).length}), gRPC and Connect`,
        kind: 'inputs',
        figures: [...tally.figures(), exactly('INTERNAL / UNKNOWN counted by the server', serverInternal, 0)],
      });
      expect(tally.report()).toBe('');
      expect(tally.crashes).toBe(0);
      expect(serverInternal).toBe(0);
      expect(serving).toBe('SERVING');
      // Every method was reached on both transports.
      expect(tally.total).toBeGreaterThanOrEqual(methodsOf(NOTIFICATION_SERVICES).length * 2 * STREAM_RUNS);
    } finally {
      await target.close();
    }
  },
  (SOAK ? 60 : 5) * 60_000,
);
