import { SpanKind as OtelKind, SpanStatusCode } from '@opentelemetry/api';
import knexFactory, { type Knex } from 'knex';
import { MetricsCollector } from '../../../../shared/monitoring/collector';
import { instrumentDatabase } from '../../../../shared/monitoring/instrumentation/database';
import { Tracer } from '../../../../shared/monitoring/tracing';
import { createTestDatabase } from '../../../support/database';

describe('instrumentDatabase on PostgreSQL', () => {
  let db: { url: string; drop(): Promise<void> };
  let knex: Knex;
  beforeAll(async () => {
    db = await createTestDatabase('trace');
    knex = knexFactory({ client: 'pg', connection: db.url, pool: { min: 0, max: 2 } });
    await knex.schema.createTable('items', (t) => {
      t.increments('id');
      t.string('secret_value');
    });
  });
  afterAll(async () => {
    await knex.destroy();
    await db.drop();
  });

  it('a span, a count and a duration per query; bindings never on the span', async () => {
    const tracer = new Tracer({ service_name: 'db' });
    const collector = new MetricsCollector();
    const stop = instrumentDatabase(knex, { tracer, collector });
    try {
      await knex('items').insert({ secret_value: 'hunter2' });
      await knex('items').select('id');
    } finally {
      stop();
    }
    const spans = tracer.getAllSpans();
    expect(spans.map((s) => s.name)).toEqual(['db.insert', 'db.select']);
    expect(spans[0]!.kind).toBe(OtelKind.CLIENT);
    expect(spans[0]!.attributes['db.system']).toBe('postgresql');
    expect(String(spans[0]!.attributes['db.statement'])).toMatch(/insert into "items"/);
    expect(JSON.stringify(spans.map((s) => [s.attributes, s.events]))).not.toContain('hunter2');
    const text = await collector.registry.metrics();
    expect(text).toMatch(/db_queries_total\{operation="insert",outcome="ok"\} 1/);
    expect(text).toMatch(/db_queries_total\{operation="select",outcome="ok"\} 1/);
    expect(text).toMatch(/db_query_duration_count\{operation="select",outcome="ok"\} 1/);
  });

  it('a failing query records the error on its span and counts it as error', async () => {
    const tracer = new Tracer({ service_name: 'db' });
    const collector = new MetricsCollector();
    const stop = instrumentDatabase(knex, { tracer, collector });
    try {
      await expect(knex('missing_table').select('*')).rejects.toThrow();
    } finally {
      stop();
    }
    const [span] = tracer.getAllSpans();
    expect(span!.status.code).toBe(SpanStatusCode.ERROR);
    expect(span!.events.map((e) => e.name)).toContain('exception');
    expect(await collector.registry.metrics()).toMatch(
      /db_queries_total\{operation="select",outcome="error"\} 1/,
    );
  });

  it('after the returned function runs, queries are no longer traced', async () => {
    const tracer = new Tracer({ service_name: 'db' });
    instrumentDatabase(knex, { tracer })();
    await knex.raw('select 1');
    expect(tracer.getAllSpans()).toHaveLength(0);
  });

  it('at most maxInFlight queries are tracked: the oldest is ended as abandoned', async () => {
    const tracer = new Tracer({ service_name: 'db' });
    const stop = instrumentDatabase(knex, { tracer, maxInFlight: 1 });
    try {
      // The first query sleeps long enough that the second starts while it runs, even on a loaded
      // machine (at 50 ms the second sometimes started only after the first had finished).
      await Promise.all([knex.raw('select pg_sleep(1)'), knex.raw('select 2')]);
    } finally {
      stop();
    }
    const spans = tracer.getAllSpans();
    expect(spans).toHaveLength(2);
    expect(spans.filter((s) => s.status.message === 'abandoned')).toHaveLength(1);
  });
});
