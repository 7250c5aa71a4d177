#!/usr/bin/env node
// `npm start` builds only when a source changed since the last build: a full build takes 13-20 s on
// two cores, and most starts follow no edit. Stale means: dist/.build-stamp is missing, or a file
// that goes into dist (TypeScript and page assets under services/ and shared/, the tsconfigs,
// package.json, the lockfile) is newer than it. `git checkout` and `npm ci` touch what they change,
// so a switched branch or new packages rebuild too. `npm run build` always builds.
//
// Usage: node scripts/build-if-stale.mjs [projectRoot]   (default: the folder above this script)
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
const stamp = join(root, 'dist', '.build-stamp');

/** Newest modification time (ms) under `path`, skipping node_modules and dist. */
function newest(path) {
  if (!existsSync(path)) return 0;
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let max = st.mtimeMs; // a deleted file shows as a newer directory
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === 'dist') continue;
    max = Math.max(max, newest(join(path, entry.name)));
  }
  return max;
}

const inputs = [
  'services',
  'shared',
  'scripts',
  'test/bench',
  'test/support',
  'tsconfig.json',
  'tsconfig.build.json',
  'package.json',
  'package-lock.json',
].map((p) => join(root, p));
const built = existsSync(stamp) ? statSync(stamp).mtimeMs : -1;
const changed = Math.max(...inputs.map(newest));
if (built >= changed) {
  console.log('build: dist is up to date (npm run build forces a build)');
  process.exit(0);
}
const startedAt = new Date();
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const run = spawnSync(npm, ['run', 'build'], { cwd: root, stdio: 'inherit' });
if (run.status !== 0) process.exit(run.status ?? 1);
// Stamped with the start of the build's inputs check, so an edit made during the build rebuilds next time.
writeFileSync(stamp, `${startedAt.toISOString()}\n`);
utimesSync(stamp, startedAt, startedAt);
