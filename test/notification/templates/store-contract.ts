/**
 * The TemplateStore contract, run against every backend (memory, PGlite, PostgreSQL): the same
 * answers from each.
 */
import type { TemplateStore } from '../../../services/notification/templates/store';
import type { Template } from '../../../services/notification/templates/types';
import type { NotifyChannel } from '../../../services/notification/notify/config';

function template(category: string, channel: NotifyChannel, locale: string, text = `[${locale}]`): Template {
  return { category, channel, locale, content: { text }, updatedAt: new Date('2026-11-27T10:00:00.123Z') };
}

let n = 0;
/** A category name no other test of the run uses (tests may share a database). */
function cat(): string {
  n += 1;
  return `c${n}-${Math.random().toString(36).slice(2, 8)}`;
}

/** Defines the contract suite over the store `open` returns. */
export function describeTemplateStoreContract(
  name: string,
  open: () => Promise<{ store: TemplateStore; close(): Promise<void> }>,
): void {
  describe(name, () => {
    let store: TemplateStore;
    let close: () => Promise<void>;
    beforeAll(async () => {
      ({ store, close } = await open());
    }, 60_000);
    afterAll(async () => close?.());

    test('upsert creates, then replaces; get returns what was stored, emoji, CJK and RTL intact', async () => {
      const c = cat();
      const first = await store.upsert(template(c, 'sms', 'en', 'hi 😀'), 1_000_000);
      expect(first).toMatchObject({ created: true, template: { content: { text: 'hi 😀' } } });
      const text = 'مرحبا {{ data.name }} — 你好 👋🏽';
      const later = { ...template(c, 'sms', 'en', text), updatedAt: new Date('2026-11-28T00:00:00Z') };
      const second = await store.upsert(later, 1_000_000);
      expect(second).toMatchObject({ created: false });
      expect(await store.get({ category: c, channel: 'sms', locale: 'en' })).toEqual(later);
      expect(await store.get({ category: c, channel: 'sms', locale: 'es' })).toBeUndefined();
    });

    test('push data (nested JSON) round-trips', async () => {
      const c = cat();
      const t: Template = {
        ...template(c, 'push', 'ja'),
        content: {
          title: '{{ data.t }}',
          data: { a: '{{ data.x }}', n: 1, deep: { list: ['x', true, null] } },
        },
      };
      await store.upsert(t, 1_000_000);
      expect(await store.get(t)).toEqual(t);
    });

    test('findFirst returns the first locale of the chain that has a template', async () => {
      const c = cat();
      await store.upsert(template(c, 'sms', 'es'), 1_000_000);
      await store.upsert(template(c, 'sms', 'en'), 1_000_000);
      expect((await store.findFirst(c, 'sms', ['es-MX', 'es', 'en']))?.locale).toBe('es');
      expect((await store.findFirst(c, 'sms', ['fr', 'en']))?.locale).toBe('en');
      expect(await store.findFirst(c, 'sms', ['fr', 'de'])).toBeUndefined();
      expect(await store.findFirst(c, 'email', ['es', 'en'])).toBeUndefined();
    });

    test('list pages in (category, channel, locale) order after a key', async () => {
      const c = cat();
      const keys: [NotifyChannel, string][] = [
        ['sms', 'en'],
        ['email', 'es'],
        ['email', 'en'],
        ['sms', 'ar'],
        ['email', 'es-MX'],
      ];
      for (const [ch, l] of keys) await store.upsert(template(c, ch, l), 1_000_000);
      const all = await store.list({ category: c, limit: 10 });
      expect(all.map((t) => `${t.channel}/${t.locale}`)).toEqual([
        'email/en',
        'email/es',
        'email/es-MX',
        'sms/ar',
        'sms/en',
      ]);
      const page = await store.list({ category: c, limit: 2, after: all[1] });
      expect(page.map((t) => `${t.channel}/${t.locale}`)).toEqual(['email/es-MX', 'sms/ar']);
    });

    test('delete removes one template and says whether there was one', async () => {
      const c = cat();
      await store.upsert(template(c, 'sms', 'en'), 1_000_000);
      expect(await store.delete({ category: c, channel: 'sms', locale: 'en' })).toBe(true);
      expect(await store.delete({ category: c, channel: 'sms', locale: 'en' })).toBe(false);
      expect(await store.get({ category: c, channel: 'sms', locale: 'en' })).toBeUndefined();
    });

    test('At max templates a new key is refused, a replacement is not', async () => {
      const c = cat();
      const total = (await store.list({ limit: 1_000_000 })).length;
      await store.upsert(template(c, 'sms', 'en'), total + 1);
      expect(await store.upsert(template(c, 'sms', 'es'), total + 1)).toEqual({ full: true });
      expect(await store.upsert(template(c, 'sms', 'en', 'again'), total + 1)).toMatchObject({
        created: false,
      });
      expect(await store.get({ category: c, channel: 'sms', locale: 'es' })).toBeUndefined();
    });

    test('upsertAll writes all or nothing: over the bound, none is written', async () => {
      const c = cat();
      const total = (await store.list({ limit: 1_000_000 })).length;
      const batch = [template(c, 'sms', 'en'), template(c, 'sms', 'es'), template(c, 'email', 'en')];
      expect(await store.upsertAll(batch, total + 2)).toEqual({ full: true });
      expect(await store.list({ category: c, limit: 10 })).toEqual([]);
      expect(await store.upsertAll(batch, total + 3)).toEqual({ created: 3 });
      expect(await store.upsertAll([template(c, 'sms', 'en', 'x')], total + 3)).toEqual({ created: 0 });
      expect((await store.get({ category: c, channel: 'sms', locale: 'en' }))?.content.text).toBe('x');
    });
  });
}
