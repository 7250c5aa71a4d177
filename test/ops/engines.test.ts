/**
 * The README and package.json promise one Node.js range; every package `npm ci` installs must accept
 * the oldest Node that range admits, or a new user sees EBADENGINE warnings (issue 29: protoc-gen-es
 * 2.14+ wants Node >= 22, so it is pinned at 2.13.0).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';

const ROOT = join(__dirname, '../..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { engines?: { node?: string } | string[]; optional?: boolean }>;
};

describe('the Node.js version the project promises', () => {
  const oldest = semver.minVersion(pkg.engines.node)!.version;

  it('is the one the README names', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme).toContain(`Node.js ${oldest.replace(/\.0$/, '')} or newer`);
  });

  it('is accepted by every package in the lock (no EBADENGINE at npm ci)', () => {
    const refusing: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
      if (!path || !range) continue;
      if (!semver.satisfies(oldest, range)) refusing.push(`${path} wants node ${range}`);
    }
    expect(refusing).toEqual([]);
  });
});
