#!/usr/bin/env node
// Copies the static files of every `page/` folder under services/ and shared/ into dist/ at the same relative
// path, so compiled code finds its assets next to itself (`npm run build` runs tsc, then this).
// TypeScript sources in those folders are tsc's business and are skipped.
//
// Usage: node scripts/copy-assets.mjs [projectRoot]   (default: the folder above this script)
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
const outDir = join(root, 'dist');

function* walk(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(path);
    else if (entry.isFile()) yield path;
  }
}

function isAsset(file) {
  const inPage = relative(root, file).split(/[\\/]/).slice(0, -1).includes('page');
  return inPage && !/\.(c|m)?tsx?$/.test(file);
}

let copied = 0;
for (const file of [...walk(join(root, 'services')), ...walk(join(root, 'shared'))]) {
  if (!isAsset(file)) continue;
  const target = join(outDir, relative(root, file));
  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(file, target);
  copied += 1;
}
console.log(`copy-assets: ${copied} file(s) copied into ${relative(process.cwd(), outDir) || outDir}`);
