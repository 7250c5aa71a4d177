/**
 * `buf breaking` never skips silently (scripts/check-proto.mjs): on a clean clone of main it compares
 * against the previous commit, on a branch against where it left main, and with nothing to compare
 * against (a shallow clone) it fails and says what to do.
 */
import { execFile, execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '../../..');
const SCRIPT = join(ROOT, 'scripts/check-proto.mjs');
const origin = `file://${execFileSync('git', ['rev-parse', '--path-format=absolute', '--git-common-dir'], {
  cwd: ROOT,
})
  .toString()
  .trim()}`;

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'check-proto-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A clone of main (as CI makes it), with this branch's script and the installed node_modules. */
function cloneMain(name: string, extra: string[] = []): string {
  const dir = join(tmp, name);
  execFileSync('git', ['clone', '--quiet', '--branch', 'main', ...extra, origin, dir]);
  copyFileSync(SCRIPT, join(dir, 'scripts/check-proto.mjs'));
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

function checkBreaking(dir: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      'node',
      ['scripts/check-proto.mjs', '--breaking-only'],
      { cwd: dir, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, output: stdout + stderr }),
    );
  });
}

function git(dir: string, ...args: string[]): void {
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: dir });
}

test('on a clean clone of main, buf breaking compares against the previous commit and passes', async () => {
  const dir = cloneMain('full');
  const { code, output } = await checkBreaking(dir);
  expect(output).toContain('buf breaking: ok, against');
  expect(output).toContain('HEAD~1');
  expect(code).toBe(0);
});

test('on a shallow clone with nothing to compare against, it fails and says what to do', async () => {
  const dir = cloneMain('shallow', ['--depth', '1']);
  const { code, output } = await checkBreaking(dir);
  expect(code).not.toBe(0);
  expect(output).toContain('nothing to compare the contract against');
  expect(output).toContain('PROTO_BREAKING_AGAINST');
});

test('a branch that removes a field fails against where it left main', async () => {
  const dir = cloneMain('breaking');
  git(dir, 'checkout', '--quiet', '-b', 'feature');
  const file = join(dir, 'proto/svc/notification/v1/inbox.proto');
  const before = readFileSync(file, 'utf8');
  const after = before.replace(/^\s*string page_token = 3;\n/m, '\n');
  expect(after).not.toBe(before);
  writeFileSync(file, after);
  git(dir, 'commit', '--quiet', '-am', 'drop a field');
  const { code, output } = await checkBreaking(dir);
  expect(code).not.toBe(0);
  expect(output).toMatch(/page_token|deleted/i);
});
