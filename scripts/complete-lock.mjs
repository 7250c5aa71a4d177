// Completes package-lock.json with the platform packages of other systems.
//
// Packages such as @bufbuild/buf, @swc/core and unrs-resolver ship their native binary as one optional
// dependency per platform. npm records every one of them in the lock when it can read their metadata,
// and `npm ci` refuses a lock that lacks any ("Missing: ... from lock file"). The registry mirror these
// machines use serves only the linux x64/arm64 variants, so a lock written here lacks the rest. This
// adds each missing variant as an optional entry at the version its parent pins, with the platform
// (`os`, `cpu`, `libc`) its name states, so that `npm ci` accepts the lock everywhere and installs
// only the variant of the machine it runs on. `--check` only reports what is missing (exit 1).
import { readFileSync, writeFileSync } from 'node:fs';

const lockPath = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(lockPath, 'utf8'));
const packages = lock.packages;

const OS = [
  'darwin',
  'linux',
  'win32',
  'android',
  'freebsd',
  'openharmony',
  'sunos',
  'aix',
  'netbsd',
  'openbsd',
];
const CPU = {
  x64: 'x64',
  arm64: 'arm64',
  aarch64: 'arm64',
  arm: 'arm',
  armv7: 'arm',
  ia32: 'ia32',
  ppc64: 'ppc64',
  s390x: 's390x',
  riscv64: 'riscv64',
  loong64: 'loong64',
};

/** The platform a package's name states: `buf-linux-armv7`, `core-win32-ia32-msvc`, `binding-linux-arm-musleabihf`. */
function platformOf(name) {
  const parts = name.split('/').pop().split('-');
  const i = parts.findIndex((p) => OS.includes(p));
  if (i < 0 || !CPU[parts[i + 1]]) return undefined;
  const abi = parts[i + 2] ?? '';
  const platform = { os: [parts[i]], cpu: [CPU[parts[i + 1]]] };
  if (parts[i] === 'linux' && abi.startsWith('musl')) platform.libc = ['musl'];
  else if (parts[i] === 'linux' && abi.startsWith('gnu')) platform.libc = ['glibc'];
  return platform;
}

const missing = [];
for (const [path, meta] of Object.entries(packages)) {
  for (const [dep, version] of Object.entries(meta.optionalDependencies ?? {})) {
    const nested = `${path}/node_modules/${dep}`;
    const top = `node_modules/${dep}`;
    if (packages[nested] || packages[top]) continue;
    const platform = platformOf(dep);
    if (!platform)
      throw new Error(`${dep} (optional dependency of ${path}) names no platform: add it by hand`);
    missing.push({ key: path === '' ? top : top, dep, version, parent: meta, platform });
  }
}

if (process.argv.includes('--check')) {
  if (missing.length > 0) {
    console.error(
      `package-lock.json lacks ${missing.map((m) => `${m.dep}@${m.version}`).join(', ')}: run node scripts/complete-lock.mjs`,
    );
    process.exit(1);
  }
  console.log('package-lock.json: every optional platform package is recorded');
  process.exit(0);
}

for (const m of missing) {
  packages[m.key] = {
    version: m.version,
    ...(m.parent.dev ? { dev: true } : {}),
    optional: true,
    ...m.platform,
  };
}
// npm writes the packages sorted by path; keep that so a later `npm install` does not reorder them.
lock.packages = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b, 'en'))),
);
writeFileSync(lockPath, JSON.stringify(lock, null, 2) + '\n');
console.log(`package-lock.json: added ${missing.length} platform packages`);
