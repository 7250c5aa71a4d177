/**
 * Figures of the reliability suite (issue 16). Each suite records what it measured with
 * `recordFigures`; the jest reporter `test/support/reliability-reporter.js` prints every section
 * recorded in the run at its end, and `npm run reliability:report` turns the last run's sections into
 * the results table in `test/reliability/RESULTS.md`. The table is produced by the suite, never
 * written by hand.
 *
 * Files: `test-artifacts/reliability/<section>.json`, one per section, overwritten by each run of it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** One measured figure. */
export interface Figure {
  /** What was measured, e.g. "acknowledged sends", "p99 SendEmail (ms)". */
  readonly name: string;
  /** The value measured. */
  readonly value: number | string;
  /** The target it is held to, in words (e.g. "0", "<= 10%"); empty when only reported. */
  readonly target?: string;
  /** Whether the value meets the target (true when there is none). */
  readonly ok: boolean;
}

/** A section of the results table: one suite, one run. */
export interface Section {
  /** Stable key, also the file name, e.g. "faults-providers". */
  readonly section: string;
  /** Heading in the table, e.g. "Faults: provider stand-ins". */
  readonly title: string;
  /** `load`, `faults`, `crash`, `inputs`, `isolation`, `interop`: the table groups by kind. */
  readonly kind: 'load' | 'faults' | 'crash' | 'inputs' | 'isolation' | 'interop';
  /** Whether this was a soak run (`SOAK=1`, `npm run soak`) or the short one in `npm test`. */
  readonly soak: boolean;
  readonly figures: readonly Figure[];
  /** ISO time the section was recorded. */
  readonly at: string;
}

/** The folder the sections are written to. */
export const RESULTS_DIR = join(__dirname, '..', '..', 'test-artifacts', 'reliability');

/** True in `npm run soak`: suites run their long version. */
export const SOAK = process.env.SOAK === '1';

/**
 * Records a section's figures (replacing the section's previous run). Call it once per section, after
 * the measurement and before the assertions, so a failing run still reports what it saw.
 */
export function recordFigures(section: Omit<Section, 'at' | 'soak'>): void {
  if (!/^[a-z0-9-]+$/.test(section.section)) throw new Error(`bad section key ${section.section}`);
  mkdirSync(RESULTS_DIR, { recursive: true });
  const full: Section = { ...section, soak: SOAK, at: new Date().toISOString() };
  writeFileSync(join(RESULTS_DIR, `${section.section}.json`), `${JSON.stringify(full, null, 2)}\n`);
}

/** A figure held to "equals `target`". */
export function exactly(name: string, value: number, target: number): Figure {
  return { name, value, target: String(target), ok: value === target };
}

/** A figure held to "at most `limit`". */
export function atMost(name: string, value: number, limit: number): Figure {
  return { name, value, target: `<= ${limit}`, ok: value <= limit };
}

/** A figure held to "at least `limit`". */
export function atLeast(name: string, value: number, limit: number): Figure {
  return { name, value, target: `>= ${limit}`, ok: value >= limit };
}

/** A figure only reported. */
export function reported(name: string, value: number | string): Figure {
  return { name, value, ok: true };
}
