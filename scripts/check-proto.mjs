// Keeps the contract honest: the vendored OTLP files unchanged (scripts/vendor-otlp.mjs), `buf lint`, regenerated code identical to the committed shared/gen, and
// `buf breaking` against the contract this change started from. Exits non-zero on any failure, and
// never skips the breaking check: with nothing to compare against it fails and says what to do.
//
// The base of `buf breaking`, in order:
// - `PROTO_BREAKING_AGAINST=<git ref>` when set (CI systems that know the target branch);
// - on a branch other than main: where it left main (`git merge-base HEAD main`, or `origin/main`);
// - on main itself (CI clones main and tests its last commit): the previous commit, `HEAD~1`.
// A shallow clone has no `HEAD~1`: fetch one more commit (`git fetch --deepen=1`) or set the variable.
//
// `--breaking-only` runs only the breaking check (its tests use it).
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const buf = join(root, 'node_modules', '.bin', 'buf');
const env = { ...process.env, PATH: `${join(root, 'node_modules', '.bin')}:${process.env.PATH}` };
const run = (args, opts = {}) => execFileSync(buf, args, { cwd: root, env, stdio: 'inherit', ...opts });
const breakingOnly = process.argv.includes('--breaking-only');

function fail(message) {
  console.error(`check-proto: ${message}`);
  process.exit(1);
}

function git(args) {
  try {
    return execFileSync('git', args, { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {
    return undefined;
  }
}

/** The commit `buf breaking` compares against, and why that one; fails when there is none. */
function breakingBase() {
  const commitOf = (ref) => git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]);
  const explicit = process.env.PROTO_BREAKING_AGAINST;
  if (explicit) {
    const commit = commitOf(explicit);
    if (!commit) fail(`PROTO_BREAKING_AGAINST=${explicit} is not a commit in this clone`);
    return { commit, why: `PROTO_BREAKING_AGAINST=${explicit}` };
  }
  const head = commitOf('HEAD');
  if (!head) fail('no git history here, so nothing to compare the contract against (buf breaking)');
  const mainRef = ['main', 'origin/main', 'refs/remotes/origin/main'].find((r) => commitOf(r));
  const main = mainRef && commitOf(mainRef);
  if (main && main !== head) {
    const base = git(['merge-base', 'HEAD', mainRef]);
    if (base && base !== head) return { commit: base, why: `where this branch left ${mainRef}` };
    if (!base) return { commit: main, why: mainRef };
  }
  const previous = commitOf('HEAD~1');
  if (!previous) {
    fail(
      'nothing to compare the contract against: HEAD has no parent commit here (a shallow clone?) ' +
        'and is not a branch off main. Fetch one more commit (`git fetch --deepen=1`) or set ' +
        'PROTO_BREAKING_AGAINST=<git ref>.',
    );
  }
  return { commit: previous, why: 'the previous commit (HEAD~1)' };
}

function breakingCheck() {
  const { commit, why } = breakingBase();
  if (git(['cat-file', '-t', `${commit}:proto`]) !== 'tree') {
    fail(`the base ${commit.slice(0, 12)} (${why}) has no proto/ directory to compare against`);
  }
  const tmp = mkdtempSync(join(tmpdir(), 'buf-base-'));
  try {
    // Both sides as plain files in a directory with no buf.yaml above it, without proto/vendor (the
    // OpenTelemetry protocol, not our contract): the base's from git (works in worktrees and shallow
    // clones alike), this tree's copied as it is now.
    const base = join(tmp, 'base');
    const head = join(tmp, 'head');
    execFileSync(
      'sh',
      [
        '-c',
        `mkdir -p "${base}" && git archive ${commit} proto | tar -x -C "${base}" && rm -rf "${base}/proto/vendor"`,
      ],
      { cwd: root, stdio: 'inherit' },
    );
    cpSync(join(root, 'proto'), join(head, 'proto'), {
      recursive: true,
      filter: (src) => !src.startsWith(join(root, 'proto', 'vendor')),
    });
    run(['breaking', join(head, 'proto'), '--against', join(base, 'proto')], { cwd: tmp });
    console.log(`buf breaking: ok, against ${commit.slice(0, 12)} (${why})`);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

if (breakingOnly) {
  breakingCheck();
  process.exit(0);
}

function listFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...listFiles(p));
    else out.push(p);
  }
  return out;
}

// The vendored OTLP definitions are still byte for byte the published ones.
execFileSync(process.execPath, [join(root, 'scripts', 'vendor-otlp.mjs'), '--check'], { stdio: 'inherit' });

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

breakingCheck();
