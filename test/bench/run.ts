/**
 * `npm run bench`: every benchmark of the project, each printed as a ratio against a baseline
 * measured in the same run. Timings never go into tests; they live here.
 *
 * Usage: npm run bench [-- name-filter]
 */
import { runRpcKitBench } from './rpc-kit.bench';
import type { BenchRow } from './measure';

type Suite = { name: string; run: () => Promise<BenchRow[]> };

const suites: Suite[] = [{ name: 'rpc-kit', run: () => runRpcKitBench() }];

function fmt(n: number): string {
  return n >= 100 ? n.toFixed(0) : n >= 1 ? n.toFixed(2) : n.toPrecision(3);
}

async function main(): Promise<void> {
  const filter = process.argv[2];
  const rows: BenchRow[] = [];
  for (const suite of suites) {
    if (filter && !suite.name.includes(filter)) continue;
    process.stdout.write(`running ${suite.name}...\n`);
    rows.push(...(await suite.run()));
  }
  process.stdout.write('\n');
  for (const r of rows) {
    process.stdout.write(
      `${r.name}\n  value ${fmt(r.value)}${r.unit ? ` ${r.unit}` : ''}, baseline ${fmt(r.baseline)}, ratio ${r.ratio.toFixed(3)} (target ${r.target})\n`,
    );
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${String(err)}\n`);
    process.exit(1);
  },
);
