/**
 * The static files of a service's browser page (`index.html`, `app.js`, `app.css` in its `page/`
 * folder, plus the shared `kit.js` and `kit.css` of `shared/http/page/` that every page loads first):
 * read once at start with a content ETag, and served with the security headers, `no-cache`
 * (revalidated every time, cheap with the ETag, so a deploy shows up on the next load) and 304 for a
 * matching `If-None-Match`. One home for the admin page and the monitor's status page.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { SECURITY_HEADERS } from './security-headers';

/** One file of a page, ready to send. */
export interface StaticAsset {
  body: Buffer;
  contentType: string;
  etag: string;
}

/** The files of a page and their content types. */
export const PAGE_ASSET_TYPES: Readonly<Record<string, string>> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
  'kit.js': 'text/javascript; charset=utf-8',
  'kit.css': 'text/css; charset=utf-8',
};

/** The files a page serves under `<its path>/assets/` (all but index.html). */
export const PAGE_ASSET_FILES: readonly string[] = ['kit.css', 'kit.js', 'app.css', 'app.js'];

/** The shared kit's folder (its files are the same for every page). */
const KIT_DIR = join(__dirname, 'page');
const KIT_FILES = new Set(['kit.js', 'kit.css']);

/**
 * Reads every file of {@link PAGE_ASSET_TYPES}: the kit's from `shared/http/page`, the rest from
 * `dir`; `page` names the page in the error. `extraScripts` are more `.js` files of `dir` a page made
 * of several modules serves beside app.js (the operator console: one script per section).
 */
export function loadPageAssets(
  dir: string,
  page: string,
  extraScripts: readonly string[] = [],
): Map<string, StaticAsset> {
  const assets = new Map<string, StaticAsset>();
  const files = Object.entries(PAGE_ASSET_TYPES);
  for (const name of extraScripts) {
    if (!/^[a-z0-9-]+\.js$/.test(name) || name in PAGE_ASSET_TYPES) {
      throw new Error(`${page} extra script ${name} must be a new lower-case .js file name`);
    }
    files.push([name, PAGE_ASSET_TYPES['app.js']!]);
  }
  for (const [name, contentType] of files) {
    let body: Buffer;
    try {
      body = readFileSync(join(KIT_FILES.has(name) ? KIT_DIR : dir, name));
    } catch (err) {
      // Compiled builds need scripts/copy-assets.mjs after tsc; say so instead of a bare ENOENT.
      throw new Error(`${page} asset ${name} is missing (was scripts/copy-assets.mjs run?)`, {
        cause: err,
      });
    }
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
    assets.set(name, { body, contentType, etag });
  }
  return assets;
}

/** Answers with one asset: 304 when the client has it, else 200 with the body. */
export function sendPageAsset(req: IncomingMessage, res: ServerResponse, asset: StaticAsset): void {
  const headers = {
    ...SECURITY_HEADERS,
    'Content-Type': asset.contentType,
    'Cache-Control': 'no-cache',
    ETag: asset.etag,
  };
  if (req.headers['if-none-match'] === asset.etag) {
    res.writeHead(304, headers);
    res.end();
    return;
  }
  res.writeHead(200, { ...headers, 'Content-Length': asset.body.length });
  res.end(asset.body);
}
