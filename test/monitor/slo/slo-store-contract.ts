/**
 * The contract every SloStateStore keeps (memory, PGlite, PostgreSQL): SLOs kept by name, samples
 * bounded per metric and by their window, time from the store's clock (a ManualClock here).
 */
import { ManualClock } from '../../support/manual-clock';
import type { SloStateStore } from '../../../services/monitor/slo/store';
import type { SloDefinition } from '../../../services/monitor/slo/slo-area';

/** A store under test on `clock`, and how to close what it opened. */
export interface SloStoreHarness {
  store: SloStateStore;
  close?(): Promise<void>;
}

let unique = 0;
/** A metric name no other test of the file uses (the database ones share one schema). */
function metricName(label: string): string {
  return `contract.${label}.${++unique}.${Math.random().toString(36).slice(2, 8)}`;
}

function definition(name: string, metric: string): SloDefinition {
  return {
    name,
    metric,
    percentile: 0.99,
    thresholdMs: 250,
    windowSeconds: 300,
    burnRateThreshold: 1,
    description: 'Zahlung 💳 결제 دفع',
    tier: 'P1_BUSINESS_HOURS',
    owner: 'payments',
    runbookUrl: 'https://runbooks.example/slo',
  };
}

/** Runs the contract against the store `open` builds on `clock`. */
export function describeSloStoreContract(
  label: string,
  open: (clock: ManualClock) => Promise<SloStoreHarness>,
): void {
  describe(`${label}: the SloStateStore contract`, () => {
    const clock = new ManualClock();
    let h: SloStoreHarness;
    beforeAll(async () => {
      h = await open(clock);
    }, 120_000);
    afterAll(async () => {
      await h?.close?.();
    });

    it('keeps an SLO once by name, with every field as given (emoji, CJK and RTL included)', async () => {
      const name = `slo ${metricName('name')} 🚀`;
      const def = definition(name, metricName('m'));
      expect(await h.store.addSlo(def)).toBe(true);
      expect(await h.store.addSlo({ ...def, thresholdMs: 999 })).toBe(false);
      const found = (await h.store.listSlos()).find((d) => d.name === name);
      expect(found).toEqual(def);
    });

    it('returns the samples of a window oldest first with their ages, and none of another metric', async () => {
      const metric = metricName('window');
      await h.store.addSamples(metric, [1, 2], 100);
      clock.advance(10_000);
      await h.store.addSamples(metric, [3], 100);
      await h.store.addSamples(metricName('other'), [99], 100);
      const all = await h.store.windowSamples(metric, 60, 100);
      expect(Array.from(all.valuesMs)).toEqual([1, 2, 3]);
      expect(Array.from(all.agesMs).map((a) => Math.round(a))).toEqual([10_000, 10_000, 0]);
      // A window of 5 s holds only the newest; a limit of 2 keeps the newest two.
      expect(Array.from((await h.store.windowSamples(metric, 5, 100)).valuesMs)).toEqual([3]);
      expect(Array.from((await h.store.windowSamples(metric, 60, 2)).valuesMs)).toEqual([2, 3]);
    });

    it('keeps at most maxPerMetric samples of a metric: the oldest go first, at the bound exactly', async () => {
      const metric = metricName('bound');
      await h.store.addSamples(metric, [1, 2, 3], 3);
      expect(Array.from((await h.store.windowSamples(metric, 60, 100)).valuesMs)).toEqual([1, 2, 3]);
      await h.store.addSamples(metric, [4, 5], 3);
      expect(Array.from((await h.store.windowSamples(metric, 60, 100)).valuesMs)).toEqual([3, 4, 5]);
    });

    it('purges samples older than their window and every sample of a metric no SLO reads', async () => {
      const kept = metricName('kept');
      const dropped = metricName('dropped');
      await h.store.addSamples(kept, [1], 100);
      await h.store.addSamples(dropped, [1], 100);
      clock.advance(120_000);
      await h.store.addSamples(kept, [2], 100);
      const deleted = await h.store.purgeSamples(new Map([[kept, 60]]));
      expect(deleted).toBeGreaterThanOrEqual(2);
      expect(Array.from((await h.store.windowSamples(kept, 3600, 100)).valuesMs)).toEqual([2]);
      expect((await h.store.windowSamples(dropped, 3600, 100)).valuesMs.length).toBe(0);
    });

    it('reserves one alert per key and window, and a released reservation restores the one before', async () => {
      const key = `${metricName('alert')}\u0000page`;
      expect(await h.store.reserve(key, 60_000)).toBe(true);
      expect(await h.store.reserve(key, 60_000)).toBe(false);
      clock.advance(59_999);
      expect(await h.store.reserve(key, 60_000)).toBe(false);
      clock.advance(1);
      expect(await h.store.reserve(key, 60_000)).toBe(true);
      // That send failed: the one before (60 s ago) counts again, as a longer window shows.
      await h.store.release(key);
      expect(await h.store.reserve(key, 90_000)).toBe(false);
      expect(await h.store.reserve(key, 60_000)).toBe(true);
      // A first reservation given back leaves nothing: the next one is taken at once.
      const fresh = metricName('fresh');
      expect(await h.store.reserve(fresh, 60_000)).toBe(true);
      await h.store.release(fresh);
      expect(await h.store.reserve(fresh, 60_000)).toBe(true);
    });

    it('an empty batch writes nothing', async () => {
      const metric = metricName('empty');
      await h.store.addSamples(metric, [], 100);
      expect((await h.store.windowSamples(metric, 60, 100)).valuesMs.length).toBe(0);
    });
  });
}
