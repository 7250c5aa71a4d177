/**
 * Digest templates (issue 26): the template of category `<name>.digest`, for a channel `<name>`
 * digests, rendered with `data.events` and `data.count`; accepted by the catalog and by templates:sync
 * (a folder named `<name>.digest`), refused with INVALID_ARGUMENT otherwise.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { NotifyConfigSchema } from '../../../services/notification/notify/config';
import { digestTemplateData } from '../../../services/notification/notify/digest';
import { syncTemplates } from '../../../services/notification/templates/sync';
import { DatabaseTemplateStore } from '../../../services/notification/templates/database-store';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { createTestDatabase } from '../../support/database';
import { buildTemplates, errorOf } from './support';

const ROOT = join(__dirname, '..', '..', '..');

const NOTIFY = NotifyConfigSchema.parse({
  default_locale: 'en',
  categories: [
    {
      name: 'comments',
      channels: ['inbox', 'email', 'push'],
      digest: { email: { window: '15m', key: 'thread_id' } },
    },
    { name: 'orders', channels: ['inbox', 'email'] },
  ],
});

const HTML = `<p>{{ data.count | plural: "one: # new comment", "other: # new comments" }}</p>
<ul>{% for e in data.events %}<li>{{ e.author }}: {{ e.text }}</li>{% endfor %}</ul>`;

describe('digest templates', () => {
  it('a <name>.digest template of a digested channel renders "3 new comments" with a Liquid loop over the events (emoji, CJK, RTL)', async () => {
    const t = buildTemplates({}, undefined, NOTIFY);
    await t.catalog.upsert({
      category: 'comments.digest',
      channel: 'email',
      locale: 'en',
      content: { subject: '{{ data.count }} new comments', html: HTML },
    });
    const data = digestTemplateData({
      events: [
        { notificationId: 'n1', occurredAt: new Date(0), data: { author: 'Ana', text: 'Nice 😀👍🏽' } },
        { notificationId: 'n2', occurredAt: new Date(1), data: { author: '李', text: '很好' } },
        { notificationId: 'n3', occurredAt: new Date(2), data: { author: 'דנה', text: 'מעולה <b>' } },
      ],
    });
    const r = await t.renderer.render({
      category: 'comments.digest',
      channel: 'email',
      locale: 'en',
      timeZone: '',
      data,
    });
    expect(r?.content.subject).toBe('3 new comments');
    expect(r?.content.html).toContain('<p>3 new comments</p>');
    expect(r?.content.html).toContain(
      '<li>Ana: Nice 😀👍🏽</li><li>李: 很好</li><li>דנה: מעולה &lt;b&gt;</li>',
    );
    expect(r?.content.text).toContain('3 new comments');
    expect(r?.content.text).toContain('李: 很好');
  });

  it('refuses a digest template for a channel the category does not digest, or of a category without digests', async () => {
    const t = buildTemplates({}, undefined, NOTIFY);
    const push = await errorOf(() =>
      t.catalog.upsert({
        category: 'comments.digest',
        channel: 'push',
        locale: 'en',
        content: { title: 'x' },
      }),
    );
    expect(push).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'channel' });
    expect(push.message).toBe('the category comments does not digest push (its digests: email)');
    const orders = await errorOf(() =>
      t.catalog.upsert({
        category: 'orders.digest',
        channel: 'email',
        locale: 'en',
        content: { subject: 'x', text: 'y' },
      }),
    );
    expect(orders).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'category' });
    expect(orders.message).toBe('the category orders has no digest (notify.categories[].digest)');
    const unknown = await errorOf(() =>
      t.catalog.upsert({
        category: 'promo.digest',
        channel: 'email',
        locale: 'en',
        content: { subject: 'x', text: 'y' },
      }),
    );
    expect(unknown).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'category' });
    expect(unknown.message).toContain('unknown category "promo"');
    const render = await errorOf(() =>
      t.renderer.render({
        category: 'orders.digest',
        channel: 'email',
        locale: 'en',
        timeZone: '',
        data: {},
      }),
    );
    expect(render.code).toBe('INVALID_ARGUMENT');
  });

  it('templates:sync takes a folder named <name>.digest', async () => {
    const t = buildTemplates({}, undefined, NOTIFY);
    const dir = await mkdtemp(join(tmpdir(), 'tpl-digest-'));
    try {
      const files = {
        'comments.digest/email.en.subject.liquid': '{{ data.count }} new comments',
        'comments.digest/email.en.html.liquid': HTML,
      };
      for (const [path, text] of Object.entries(files)) {
        await mkdir(dirname(join(dir, path)), { recursive: true });
        await writeFile(join(dir, path), text);
      }
      const report = await syncTemplates(dir, {
        ...t,
        maxSourceBytes: t.config.max_source_bytes,
        maxTemplates: t.config.max_templates,
      });
      expect(report.created).toEqual(['comments.digest/email/en']);
      expect((await t.catalog.get('comments.digest', 'email', 'en')).content.html).toBe(HTML);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('npm run templates:sync with a digest template (the built command, real PostgreSQL)', () => {
  it('writes comments.digest/email.en.*.liquid as the digest template of comments', async () => {
    const db = await createTestDatabase('digestsync');
    const dir = await mkdtemp(join(tmpdir(), 'tpl-digest-cmd-'));
    try {
      await mkdir(join(dir, 'comments.digest'));
      await writeFile(join(dir, 'comments.digest/email.en.subject.liquid'), '{{ data.count }} new comments');
      await writeFile(join(dir, 'comments.digest/email.en.html.liquid'), HTML);
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [join(ROOT, 'dist/services/notification/templates-sync.js'), dir],
        {
          env: {
            ...process.env,
            NODE_OPTIONS: '',
            SVC_NOTIFICATION__DATABASE__URL: db.url,
            SVC_NOTIFICATION__NOTIFY__CATEGORIES: JSON.stringify([
              { name: 'comments', channels: ['inbox', 'email'], digest: { email: { window: '15m' } } },
            ]),
          },
        },
      );
      expect(stdout).toContain('created   comments.digest/email/en');
      const knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 1 }, silentLogger());
      try {
        const stored = await new DatabaseTemplateStore(knex).get({
          category: 'comments.digest',
          channel: 'email',
          locale: 'en',
        });
        expect(stored?.content.html).toBe(HTML);
      } finally {
        await knex.destroy();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
      await db.drop();
    }
  });
});
