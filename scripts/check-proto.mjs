// Keeps the contract honest: `buf lint`, regenerated code identical to the committed shared/gen, and
// `buf breaking` against the last commit of main. Exits non-zero on any failure.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const buf = join(root, 'node_modules', '.bin', 'buf');
const env = { ...process.env, PATH: `${join(root, 'node_modules', '.bin')}:${process.env.PATH}` };
const run = (args, opts = {}) => execFileSync(buf, args, { cwd: root, env, stdio: 'inherit', ...opts });

function listFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...listFiles(p));
    else out.push(p);
  }
  return out;
}

run(['lint']);
console.log('buf lint: ok');

const tmp = mkdtempSync(join(tmpdir(), 'buf-gen-'));
try {
  run(['generate', '--output', tmp]);
  const fresh = join(tmp, 'shared', 'gen');
  const committed = join(root, 'shared', 'gen');
  const a = listFiles(fresh)
    .map((f) => relative(fresh, f))
    .sort();
  const b = listFiles(committed)
    .map((f) => relative(committed, f))
    .sort();
  const differences = [];
  for (const f of new Set([...a, ...b])) {
    const x = a.includes(f) ? readFileSync(join(fresh, f), 'utf8') : null;
    const y = b.includes(f) ? readFileSync(join(committed, f), 'utf8') : null;
    if (x !== y) differences.push(f);
  }
  if (differences.length > 0) {
    console.error(
      `shared/gen is out of date with proto/ (run \`npm run generate\`): ${differences.join(', ')}`,
    );
    process.exit(1);
  }
  console.log('buf generate: shared/gen is up to date');
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

// Breaking-change check against main's last commit, when main has a contract to compare with.
const gitDir = execFileSync('git', ['rev-parse', '--git-common-dir'], { cwd: root }).toString().trim();
let hasBase = true;
try {
  execFileSync('git', ['cat-file', '-e', 'main:proto'], { cwd: root, stdio: 'ignore' });
} catch {
  hasBase = false;
}
if (hasBase) {
  run(['breaking', '--against', `${resolve(root, gitDir)}#branch=main,subdir=proto`]);
  console.log('buf breaking (against main): ok');
} else {
  console.log('buf breaking: main has no proto/ yet; nothing to compare against');
}
