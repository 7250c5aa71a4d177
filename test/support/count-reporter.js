// Writes the run's pass/fail counts to test-artifacts/counts.json for .ci/run to print.
const { mkdirSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

class CountReporter {
  onRunComplete(_contexts, results) {
    const dir = join(__dirname, '..', '..', 'test-artifacts');
    mkdirSync(dir, { recursive: true });
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    const counts = {
      passed: results.numPassedTests,
      failed,
      skipped: results.numPendingTests + results.numTodoTests,
    };
    writeFileSync(join(dir, 'counts.json'), JSON.stringify(counts));
  }
}
module.exports = CountReporter;
