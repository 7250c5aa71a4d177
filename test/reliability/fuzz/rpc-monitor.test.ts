/**
 * Bad input (issue 16): random and boundary messages to every RPC of the monitor service
 * (MonitorService and the OTLP trace and metrics services: enumerated from
 * test/reliability/surfaces.ts, so a new RPC is fuzzed without anyone adding it), over gRPC and
 * Connect. No crash, no INTERNAL, every rejection with a reason; cancelled WatchAlerts streams are
 * released. The rules and run counts are in ./rpc-fuzzer.ts.
 */
import { MONITOR_SERVICES, methodsOf } from '../surfaces';
import { exactly, recordFigures, SOAK } from '../results';
import { healthCheck, healthClient } from '../../support/grpc-clients';
import { waitFor } from '../../support/wait';
import { fuzzServices, serverInternalCount, STREAM_RUNS } from './rpc-fuzzer';
import { fuzzSeed } from './tally';
import { startMonitorTarget } from './targets';

test(
  'every monitor RPC, fuzzed over gRPC and Connect: no crash, no INTERNAL, every rejection with a reason',
  async () => {
    const seed = fuzzSeed();
    // The seed replays the run: FUZZ_SEED=<seed> npx jest test/reliability/fuzz/rpc-monitor
    console.log(`monitor rpc fuzz seed ${seed} (replay with FUZZ_SEED=${seed})`);
    const m = await startMonitorTarget();
    try {
      const tally = await fuzzServices(MONITOR_SERVICES, m.grpcAddress, m.baseUrl, seed);
      // Cancelled streams are released: no watch outlives its caller.
      await waitFor(() => m.app.alerts.hub.watcherCount === 0, 'fuzzed WatchAlerts streams to close');
      const health = healthClient(m.grpcAddress);
      const serving = await healthCheck(health, '').finally(() => health.close());
      const serverInternal = serverInternalCount(await m.app.registry.metrics());
      recordFigures({
        section: 'fuzz-rpc-monitor',
        title: `Bad input: every monitor RPC, MonitorService and OTLP (${methodsOf(MONITOR_SERVICES).length}), gRPC and Connect`,
        kind: 'inputs',
        figures: [...tally.figures(), exactly('INTERNAL / UNKNOWN counted by the server', serverInternal, 0)],
      });
      expect(tally.report()).toBe('');
      expect(tally.crashes).toBe(0);
      expect(serverInternal).toBe(0);
      expect(serving).toBe('SERVING');
      // Every method was reached on both transports.
      expect(tally.total).toBeGreaterThanOrEqual(methodsOf(MONITOR_SERVICES).length * 2 * STREAM_RUNS);
    } finally {
      await m.close();
    }
  },
  (SOAK ? 60 : 5) * 60_000,
);
