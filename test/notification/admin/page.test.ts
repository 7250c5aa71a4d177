import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunningNotificationApp } from '../../support/notification-app';
import { startAdminService } from './harness';

describe('the management page and its assets', () => {
  let svc: RunningNotificationApp;
  beforeAll(async () => {
    svc = await startAdminService();
  });
  afterAll(() => svc.close());

  it('serves the page as HTML without a token', async () => {
    const res = await fetch(`${svc.baseUrl}/admin/notifications`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await res.text();
    // The shared kit (shared/http/page) first, then the page's own script, which uses it.
    expect(html.indexOf('<script src="/admin/notifications/assets/kit.js" defer></script>')).toBeGreaterThan(
      0,
    );
    expect(html.indexOf('assets/kit.js')).toBeLessThan(html.indexOf('assets/app.js'));
    expect(html.indexOf('assets/kit.css')).toBeLessThan(html.indexOf('assets/app.css'));
    expect(html).toContain('id="badge"');
  });

  it('the page has no inline script, inline style or external reference', async () => {
    const html = await (await fetch(`${svc.baseUrl}/admin/notifications`)).text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
  });

  it.each([
    ['app.js', 'text/javascript; charset=utf-8'],
    ['app.css', 'text/css; charset=utf-8'],
    ['kit.js', 'text/javascript; charset=utf-8'],
    ['kit.css', 'text/css; charset=utf-8'],
  ])('serves %s with its content type and an ETag', async (name, type) => {
    const res = await fetch(`${svc.baseUrl}/admin/notifications/assets/${name}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(type);
    expect(res.headers.get('etag')).toMatch(/^".+"$/);
  });

  it('answers 304 when the asset ETag matches', async () => {
    const first = await fetch(`${svc.baseUrl}/admin/notifications/assets/app.js`);
    const res = await fetch(`${svc.baseUrl}/admin/notifications/assets/app.js`, {
      headers: { 'If-None-Match': first.headers.get('etag')! },
    });
    expect(res.status).toBe(304);
  });

  it('does not serve files that are not listed assets', async () => {
    for (const path of ['index.html', '..%2Fgateway.ts', '../gateway.ts', 'app.js.map']) {
      const res = await fetch(`${svc.baseUrl}/admin/notifications/assets/${path}`);
      expect(res.status).toBe(404);
    }
  });

  it('answers HEAD on the page with headers only', async () => {
    const res = await fetch(`${svc.baseUrl}/admin/notifications`, { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('');
  });
});

describe('scripts/copy-assets.mjs', () => {
  it('copies the non-TypeScript files of page folders into dist at the same path', () => {
    const root = mkdtempSync(join(tmpdir(), 'copy-assets-'));
    try {
      mkdirSync(join(root, 'services/a/page/img'), { recursive: true });
      mkdirSync(join(root, 'services/b'), { recursive: true });
      writeFileSync(join(root, 'services/a/page/app.js'), 'js');
      writeFileSync(join(root, 'services/a/page/img/logo.svg'), '<svg/>');
      writeFileSync(join(root, 'services/a/page/types.ts'), 'export {}');
      writeFileSync(join(root, 'services/b/notes.txt'), 'not a page asset');
      mkdirSync(join(root, 'shared/http/page'), { recursive: true });
      writeFileSync(join(root, 'shared/http/page/kit.js'), 'kit');
      execFileSync(process.execPath, [join(__dirname, '../../../scripts/copy-assets.mjs'), root], {
        stdio: 'pipe',
      });
      expect(readFileSync(join(root, 'dist/services/a/page/app.js'), 'utf8')).toBe('js');
      expect(readFileSync(join(root, 'dist/services/a/page/img/logo.svg'), 'utf8')).toBe('<svg/>');
      expect(existsSync(join(root, 'dist/services/a/page/types.ts'))).toBe(false);
      expect(existsSync(join(root, 'dist/services/b/notes.txt'))).toBe(false);
      expect(readFileSync(join(root, 'dist/shared/http/page/kit.js'), 'utf8')).toBe('kit');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
