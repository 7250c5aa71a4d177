/**
 * templates:sync: the folder layout, all-or-nothing validation naming the file, line and column, and
 * the change report. The function on the memory store, and the command (`templates-sync.js`, built
 * to dist) as a separate process on real PostgreSQL through the service's config loader.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { DatabaseTemplateStore } from '../../../services/notification/templates/database-store';
import { syncTemplates } from '../../../services/notification/templates/sync';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { createTestDatabase } from '../../support/database';
import { buildTemplates, errorOf } from './support';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..', '..');

async function folderWith(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tpl-sync-'));
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return dir;
}

const GOOD = {
  'orders/email.en.subject.liquid': 'Order {{ data.id }}',
  'orders/email.en.html.liquid': '<p>Hi {{ data.name }}</p>',
  'orders/email.es-mx.subject.liquid': 'Pedido {{ data.id }} 📦',
  'orders/email.es-mx.html.liquid': '<p>Hola {{ data.name }} — مرحبا 你好</p>',
  'orders/sms.en.text.liquid': 'Order {{ data.id }} shipped',
  'orders/push.en.title.liquid': 'Order {{ data.id }}',
  'orders/push.en.data.json': '{"url": "/o/{{ data.id }}"}',
};

function deps(t: ReturnType<typeof buildTemplates>) {
  return { ...t, maxSourceBytes: t.config.max_source_bytes, maxTemplates: t.config.max_templates };
}

describe('syncTemplates', () => {
  const dirs: string[] = [];
  afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

  test('A folder is written whole; a second sync reports unchanged, an edit updated, others kept', async () => {
    const t = buildTemplates();
    const dir = await folderWith(GOOD);
    dirs.push(dir);
    const first = await syncTemplates(dir, deps(t));
    expect(first.created).toEqual([
      'orders/email/en',
      'orders/email/es-MX',
      'orders/push/en',
      'orders/sms/en',
    ]);
    expect((await t.catalog.get('orders', 'email', 'es-MX')).content).toEqual({
      subject: 'Pedido {{ data.id }} 📦',
      html: '<p>Hola {{ data.name }} — مرحبا 你好</p>',
    });
    expect((await t.catalog.get('orders', 'push', 'en')).content.data).toEqual({ url: '/o/{{ data.id }}' });
    await t.catalog.upsert({ category: 'security', channel: 'sms', locale: 'en', content: { text: 'x' } });
    await writeFile(join(dir, 'orders/sms.en.text.liquid'), 'Order {{ data.id }} is on its way');
    const second = await syncTemplates(dir, deps(t));
    expect(second).toEqual({
      created: [],
      updated: ['orders/sms/en'],
      unchanged: ['orders/email/en', 'orders/email/es-MX', 'orders/push/en'],
      kept: ['security/sms/en'],
    });
  });

  test('A syntax error fails the whole sync naming the file, line and column; nothing is written', async () => {
    const t = buildTemplates();
    const dir = await folderWith({ ...GOOD, 'orders/sms.es.text.liquid': 'Pedido\n  {{ data.id | nope }}' });
    dirs.push(dir);
    const err = await errorOf(() => syncTemplates(dir, deps(t)));
    expect(err.message).toBe('orders/sms.es.text.liquid: undefined filter: nope (line 2, column 3)');
    expect((await t.catalog.list({})).templates).toEqual([]);
  });

  test('A bad name, a part the channel lacks, an unknown category, a bad data file: refused with the path', async () => {
    const cases: [Record<string, string>, string][] = [
      [{ 'orders/readme.md': 'x' }, 'orders/readme.md: expected <channel>.<locale>.<part>.liquid'],
      [
        { 'orders/sms.en.subject.liquid': 'x' },
        'orders/sms.en.subject.liquid: content.subject: the sms channel has no subject',
      ],
      [{ 'promo/sms.en.text.liquid': 'x' }, 'promo/sms.en.text.liquid: unknown category "promo"'],
      [{ 'orders/push.en.data.json': '[1]' }, 'orders/push.en.data.json: is not a JSON object'],
      [
        { 'orders/email.fr.html.liquid': '<p>x</p>' },
        'orders/email.fr.html.liquid: an email template needs a subject',
      ],
    ];
    for (const [files, message] of cases) {
      const t = buildTemplates();
      const dir = await folderWith({ ...GOOD, ...files });
      dirs.push(dir);
      const err = await errorOf(() => syncTemplates(dir, deps(t)));
      expect(err.message).toContain(message);
      expect((await t.catalog.list({})).templates).toEqual([]);
    }
  });

  test('A file over max_source_bytes is refused with its path', async () => {
    const t = buildTemplates({ max_source_bytes: 16 });
    const dir = await folderWith({ 'orders/sms.en.text.liquid': '漢'.repeat(6) });
    dirs.push(dir);
    const err = await errorOf(() => syncTemplates(dir, deps(t)));
    expect(err.message).toBe('orders/sms.en.text.liquid: larger than 16 bytes (templates.max_source_bytes)');
  });
});

describe('npm run templates:sync (the built command, real PostgreSQL)', () => {
  let db: { url: string; drop(): Promise<void> };
  let dir: string;
  beforeAll(async () => {
    db = await createTestDatabase('templatessync');
    dir = await folderWith(GOOD);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await db?.drop();
  });

  const env = () => ({
    ...process.env,
    NODE_OPTIONS: '',
    SVC_NOTIFICATION__DATABASE__URL: db.url,
    SVC_NOTIFICATION__NOTIFY__CATEGORIES: JSON.stringify([
      { name: 'orders', channels: ['inbox', 'email', 'sms', 'push'] },
    ]),
  });
  const command = join(ROOT, 'dist/services/notification/templates-sync.js');

  test('It writes the folder into the configured database and prints what changed', async () => {
    const { stdout } = await run(process.execPath, [command, dir], { env: env() });
    expect(stdout).toContain('created   orders/email/es-MX');
    expect(stdout).toContain('templates: 4 created, 0 updated, 0 unchanged, 0 kept');
    const knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 1 }, silentLogger());
    try {
      const stored = await new DatabaseTemplateStore(knex).get({
        category: 'orders',
        channel: 'email',
        locale: 'es-MX',
      });
      expect(stored?.content.subject).toBe('Pedido {{ data.id }} 📦');
    } finally {
      await knex.destroy();
    }
  });

  test('A bad file exits 1 with its path, line and column, and writes nothing', async () => {
    await writeFile(join(dir, 'orders/sms.en.text.liquid'), 'changed {{ data.id');
    await writeFile(join(dir, 'orders/inbox.en.title.liquid'), 'new');
    const err = (await run(process.execPath, [command, dir], { env: env() }).catch((e: unknown) => e)) as {
      code: number;
      stderr: string;
    };
    expect(err.code).toBe(1);
    expect(err.stderr).toContain('nothing written');
    expect(err.stderr).toMatch(/orders\/sms\.en\.text\.liquid: .*\(line 1, column \d+\)/);
    const knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 1 }, silentLogger());
    try {
      const store = new DatabaseTemplateStore(knex);
      expect((await store.get({ category: 'orders', channel: 'sms', locale: 'en' }))?.content.text).toBe(
        'Order {{ data.id }} shipped',
      );
      expect(await store.get({ category: 'orders', channel: 'inbox', locale: 'en' })).toBeUndefined();
    } finally {
      await knex.destroy();
    }
  });
});
