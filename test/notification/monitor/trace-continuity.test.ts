/**
 * Trace continuity across the delivery queue, in-process: the span active when a delivery is
 * submitted (SendEmail's server span in the service) is stored as a W3C traceparent with the record,
 * and the worker's attempt span and the provider call span are its descendants, also when the record
 * goes through real PostgreSQL and is claimed by another pipeline (another replica). Spans are
 * collected with the SDK's in-memory exporter.
 */
import type { Knex } from 'knex';
import { SpanKind, context, trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { DatabaseDeliveryStore } from '../../../services/notification/delivery/database-store';
import { InMemoryDeliveryStore } from '../../../services/notification/delivery/memory-store';
import type { DeliveryStore } from '../../../services/notification/delivery';
import { notificationMigrations } from '../../../services/notification/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { spanContextManager } from '../../../shared/monitoring/tracing/context';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { createTestDatabase } from '../../support/database';
import { ScriptedDriver, buildPipeline, pollAndSettle } from '../delivery/support';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
let db: { url: string; drop(): Promise<void> };
let knex: Knex;

beforeAll(async () => {
  spanContextManager();
  trace.setGlobalTracerProvider(provider);
  db = await createTestDatabase('tracecont');
  knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 4 }, silentLogger());
  await runMigrations(knex, notificationMigrations);
});
afterEach(() => exporter.reset());
afterAll(async () => {
  trace.disable();
  context.disable();
  await knex?.destroy();
  await db?.drop();
});

const stores: [string, () => DeliveryStore][] = [
  ['memory store', () => new InMemoryDeliveryStore()],
  ['database store (PostgreSQL)', () => new DatabaseDeliveryStore(knex)],
];

function byName(spans: ReadableSpan[], name: string): ReadableSpan[] {
  return spans.filter((s) => s.name === name);
}

describe.each(stores)('with the %s', (_label, makeStore) => {
  it('the attempt span is a child of the submitting span and the provider call a child of the attempt, in one trace', async () => {
    const store = makeStore();
    const driver = new ScriptedDriver('relay');
    const { pipeline } = buildPipeline(store, [driver]);
    const tracer = provider.getTracer('test');

    const id = await tracer.startActiveSpan('SendEmail', { kind: SpanKind.SERVER }, async (span) => {
      try {
        const { delivery } = await pipeline.submit({
          channel: 'email',
          recipient: 'jane@example.com',
          payload: { subject: 'Hi' },
          scope: 'caller',
        });
        return delivery.id;
      } finally {
        span.end();
      }
    });
    // Another pipeline on the same store (a replica, or this process after a restart) sends it.
    const { pipeline: replica } = buildPipeline(store, [driver]);
    expect(await pollAndSettle(replica)).toBe(1);

    const spans = exporter.getFinishedSpans();
    const [root] = byName(spans, 'SendEmail');
    const [attempt] = byName(spans, 'delivery.attempt');
    const [send] = byName(spans, 'delivery.provider.send');
    expect(root && attempt && send).toBeTruthy();
    const traceId = root!.spanContext().traceId;
    expect(attempt!.spanContext().traceId).toBe(traceId);
    expect(send!.spanContext().traceId).toBe(traceId);
    expect(attempt!.parentSpanContext?.spanId).toBe(root!.spanContext().spanId);
    expect(send!.parentSpanContext?.spanId).toBe(attempt!.spanContext().spanId);
    expect(attempt!.kind).toBe(SpanKind.CONSUMER);
    expect(send!.kind).toBe(SpanKind.CLIENT);
    expect(attempt!.attributes).toMatchObject({
      'delivery.id': id,
      'delivery.outcome': 'sent',
      'delivery.attempt': 1,
    });
    expect((await store.get(id))!.traceParent).toBe(`00-${traceId}-${root!.spanContext().spanId}-01`);
  });

  it('a delivery submitted outside any trace stores no traceparent, and its attempt starts a trace of its own', async () => {
    const store = makeStore();
    const { pipeline } = buildPipeline(store, [new ScriptedDriver('relay')]);
    const { delivery } = await pipeline.submit({
      channel: 'email',
      recipient: 'jane@example.com',
      payload: { subject: 'Hi' },
      scope: 'caller',
    });
    expect((await store.get(delivery.id))!.traceParent).toBeNull();
    await pollAndSettle(pipeline);
    const [attempt] = byName(exporter.getFinishedSpans(), 'delivery.attempt');
    expect(attempt!.parentSpanContext).toBeUndefined();
  });
});
