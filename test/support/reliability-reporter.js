// Prints the reliability suite's figures (test/reliability/results.ts) recorded during this jest run,
// at its very end, so a run of `npm test` or `npm run soak` ends with what it measured.
const { readdirSync, readFileSync, statSync } = require('node:fs');
const { join } = require('node:path');

const DIR = join(__dirname, '..', '..', 'test-artifacts', 'reliability');

class ReliabilityReporter {
  onRunStart() {
    this.started = Date.now();
  }

  onRunComplete() {
    let files;
    try {
      files = readdirSync(DIR).filter((f) => f.endsWith('.json'));
    } catch {
      return;
    }
    const sections = files
      .filter((f) => statSync(join(DIR, f)).mtimeMs >= (this.started ?? 0))
      .map((f) => JSON.parse(readFileSync(join(DIR, f), 'utf8')))
      .sort((a, b) => a.kind.localeCompare(b.kind) || a.section.localeCompare(b.section));
    if (sections.length === 0) return;
    const lines = ['', 'Reliability figures (this run):'];
    for (const s of sections) {
      lines.push(`  ${s.title}${s.soak ? ' (soak)' : ''}`);
      for (const f of s.figures) {
        const target = f.target ? ` (target ${f.target})` : '';
        lines.push(`    ${f.ok ? ' ' : '!'} ${f.name}: ${f.value}${target}`);
      }
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  }
}
module.exports = ReliabilityReporter;
