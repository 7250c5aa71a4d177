// Writes test/reliability/RESULTS.md from the sections the reliability suite recorded in its last run
// (test-artifacts/reliability/*.json, see test/reliability/results.ts). Run by `npm run reliability`
// and `npm run soak` after the suite; the table is the suite's output, not hand-written.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = join(root, 'test-artifacts', 'reliability');
const out = join(root, 'test', 'reliability', 'RESULTS.md');

const KINDS = [
  ['load', 'Load held'],
  ['faults', 'Faults survived'],
  ['crash', 'Crashes: lost and duplicated'],
  ['inputs', 'Inputs tried'],
  ['interop', 'Clients other people wrote'],
  ['isolation', 'Isolation and secrets'],
];

let sections = [];
try {
  sections = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')));
} catch {
  console.error(`no results in ${dir}: run the suite first (npm run reliability)`);
  process.exit(1);
}
if (sections.length === 0) {
  console.error(`no results in ${dir}: run the suite first (npm run reliability)`);
  process.exit(1);
}

const cell = (v) => String(v).replaceAll('|', '\\|');
const lines = [
  '# Reliability results',
  '',
  'Produced by `npm run reliability` (the short runs, also part of `npm test`) or `npm run soak` (the long',
  'runs) through `scripts/reliability-report.mjs`; do not edit by hand. A `!` marks a figure that missed',
  'its target in that run.',
  '',
  `Machine: ${cpus().length} cores (${cell(cpus()[0]?.model ?? 'unknown')}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}.`,
  '',
];
for (const [kind, heading] of KINDS) {
  const ofKind = sections.filter((s) => s.kind === kind).sort((a, b) => a.section.localeCompare(b.section));
  if (ofKind.length === 0) continue;
  lines.push(`## ${heading}`, '');
  for (const s of ofKind) {
    lines.push(`### ${s.title}`, '', `${s.soak ? 'Soak run' : 'Short run'}, ${s.at}.`, '');
    lines.push('| | Figure | Value | Target |', '|---|---|---|---|');
    for (const f of s.figures) {
      lines.push(`| ${f.ok ? '' : '!'} | ${cell(f.name)} | ${cell(f.value)} | ${cell(f.target ?? '')} |`);
    }
    lines.push('');
  }
}
writeFileSync(out, lines.join('\n'));
console.log(`wrote ${out} (${sections.length} sections)`);
