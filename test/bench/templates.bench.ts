/**
 * Templates benchmark: our render of an email template (subject + HTML + text: the category
 * lookup, the locale fallback, the store read, strict Liquid with the cached parse, output bounds)
 * against raw LiquidJS rendering the same parsed sources with the same data, in one process,
 * interleaved in rounds (medians). ratio = our renders/s / raw renders/s (target >= 0.8).
 */
import { Liquid } from 'liquidjs';
import { NotifyConfigSchema } from '../../services/notification/notify/config';
import { createTemplates, DEFAULT_TEMPLATES_CONFIG } from '../../services/notification/templates';
import { compareThroughput, type BenchRow } from './measure';

const SLICE_MS = 1000;

const SUBJECT = 'Your order {{ data.order.id }} has shipped, {{ user.attributes.first_name }}';
const HTML = `<html><head><style>p { color: #333; } td.price { text-align: right; }</style></head><body>
<p>Hi {{ user.attributes.first_name | capitalize }},</p>
<p>Your order <b>{{ data.order.id }}</b> is on its way to {{ data.order.city }}.</p>
<table>{% for item in data.order.items %}<tr><td>{{ item.name }}</td><td class="price">{{ item.price }}</td></tr>{% endfor %}</table>
<p>Total: {{ data.order.total }} {{ data.order.currency }}</p>
<p><a href="https://shop.example.com/orders/{{ data.order.id }}">Track it</a></p>
</body></html>`;
const TEXT = `Hi {{ user.attributes.first_name | capitalize }},
Your order {{ data.order.id }} is on its way to {{ data.order.city }}.
{% for item in data.order.items %}- {{ item.name }}: {{ item.price }}
{% endfor %}Total: {{ data.order.total }} {{ data.order.currency }}`;

const DATA = {
  order: {
    id: 'A-10293',
    city: 'Ciudad de México',
    total: '123.40',
    currency: 'MXN',
    items: Array.from({ length: 5 }, (_, i) => ({ name: `Item ${i} <b>`, price: `${10 + i}.99` })),
  },
};
const USER = { user_id: 'u-1', attributes: { first_name: 'zoë' } };

/** Renders per second of `render`, for one time slice. */
async function rate(render: () => Promise<unknown>): Promise<number> {
  const until = performance.now() + SLICE_MS;
  let n = 0;
  const started = performance.now();
  while (performance.now() < until) {
    await render();
    n++;
  }
  return n / ((performance.now() - started) / 1000);
}

/** Runs the templates benchmark. */
export async function runTemplatesBench(): Promise<BenchRow[]> {
  const notify = NotifyConfigSchema.parse({
    default_locale: 'en',
    categories: [{ name: 'orders', channels: ['email'] }],
  });
  const { catalog, renderer } = createTemplates({
    config: { ...DEFAULT_TEMPLATES_CONFIG, store_backend: 'memory' },
    notify,
  });
  await catalog.upsert({
    category: 'orders',
    channel: 'email',
    locale: 'es',
    content: { subject: SUBJECT, html: HTML, text: TEXT },
  });
  const ours = () =>
    renderer.render({
      category: 'orders',
      channel: 'email',
      locale: 'es-MX',
      timeZone: '',
      data: DATA,
      user: USER,
    });

  // Raw LiquidJS: the same sources, parsed once, rendered with the same scope (HTML escaped alike).
  const text = new Liquid({ strictVariables: true });
  const html = new Liquid({ strictVariables: true, outputEscape: 'escape' });
  const parsed = { subject: text.parse(SUBJECT), html: html.parse(HTML), text: text.parse(TEXT) };
  const scope = { data: DATA, user: USER };
  const raw = async () => ({
    subject: await text.render(parsed.subject, scope),
    html: await html.render(parsed.html, scope),
    text: await text.render(parsed.text, scope),
  });

  const sample = await ours();
  if (!sample?.content.html?.includes('style="color: #333;"'))
    throw new Error('the bench template did not render');
  const r = await compareThroughput(
    () => rate(ours),
    () => rate(raw),
    5,
  );
  return [
    {
      name: 'email render (subject+html+text) vs raw LiquidJS',
      value: r.value,
      baseline: r.baseline,
      ratio: r.ratio,
      target: '>= 0.8',
      unit: 'renders/s',
    },
  ];
}
