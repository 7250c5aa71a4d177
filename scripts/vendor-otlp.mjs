// The OpenTelemetry protocol's message definitions (OTLP), taken unchanged from a published npm
// package rather than copied by hand: `node scripts/vendor-otlp.mjs` downloads the package named
// below with `npm pack` (the npm registry only), checks its integrity against the one recorded here,
// and writes the .proto files the monitor serves into proto/vendor with their SHA-256 sums.
// `--check` (run by scripts/check-proto.mjs) verifies that the files in proto/vendor still have those
// sums, so an edit by hand is caught.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const PACKAGE = '@opentelemetry/otlp-grpc-exporter-base@0.34.0';
const INTEGRITY =
  'sha512-8k3CIVjf2+/kmnQNKIR8GtPIfRsQ5ZxBVh3uKof54stVXH/nX5ArceuQaoEfFoFQ8S8wayBZ1QsBwdab65UK0g==';
/** The files the monitor needs: traces and metrics, their collector services and what they import. */
const FILES = [
  'opentelemetry/proto/collector/metrics/v1/metrics_service.proto',
  'opentelemetry/proto/collector/trace/v1/trace_service.proto',
  'opentelemetry/proto/common/v1/common.proto',
  'opentelemetry/proto/metrics/v1/metrics.proto',
  'opentelemetry/proto/resource/v1/resource.proto',
  'opentelemetry/proto/trace/v1/trace.proto',
];

const root = new URL('..', import.meta.url).pathname;
const vendor = join(root, 'proto', 'vendor');
const sumsFile = join(vendor, 'SHA256SUMS');
const sha256 = (path) => createHash('sha256').update(readFileSync(path)).digest('hex');

function listProtos(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return listProtos(p);
    return p.endsWith('.proto') ? [relative(vendor, p)] : [];
  });
}

if (process.argv.includes('--check')) {
  const expected = new Map(
    readFileSync(sumsFile, 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.split(/\s+/).reverse()),
  );
  const present = listProtos(vendor).sort();
  const problems = [];
  for (const f of present) {
    if (!expected.has(f)) problems.push(`${f} is not from ${PACKAGE}`);
    else if (expected.get(f) !== sha256(join(vendor, f))) problems.push(`${f} differs from ${PACKAGE}`);
  }
  for (const f of expected.keys()) if (!present.includes(f)) problems.push(`${f} is missing`);
  if (problems.length > 0) {
    console.error(`proto/vendor: ${problems.join('; ')} (run node scripts/vendor-otlp.mjs)`);
    process.exit(1);
  }
  console.log(`proto/vendor: ${present.length} files as published in ${PACKAGE}`);
  process.exit(0);
}

const tmp = mkdtempSync(join(tmpdir(), 'otlp-'));
try {
  const out = JSON.parse(
    execFileSync('npm', ['pack', PACKAGE, '--json', '--pack-destination', tmp], { encoding: 'utf8' }),
  );
  if (out[0].integrity !== INTEGRITY) {
    throw new Error(`${PACKAGE} integrity ${out[0].integrity} is not the recorded ${INTEGRITY}`);
  }
  execFileSync('tar', ['-xzf', join(tmp, out[0].filename), '-C', tmp]);
  const protos = join(tmp, 'package', 'build', 'protos');
  rmSync(join(vendor, 'opentelemetry'), { recursive: true, force: true });
  for (const f of FILES) cpSync(join(protos, f), join(vendor, f));
  writeFileSync(sumsFile, FILES.map((f) => `${sha256(join(vendor, f))}  ${f}`).join('\n') + '\n');
  console.log(`proto/vendor: ${FILES.length} files from ${PACKAGE}`);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
