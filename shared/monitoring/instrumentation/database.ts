/**
 * `instrumentDatabase(knex)`: a CLIENT span per query (its SQL text, never its bindings, which hold
 * user data), and per query a count (`db.queries`, by operation and outcome) and a duration
 * (`db.query.duration`, seconds), with errors recorded on the span. Built on knex's query events, so
 * every query of the instance is seen, whoever runs it.
 */
import type { Knex } from 'knex';
import type { MetricsCollectorProtocol } from '../collector';
import { NoopMetricsCollector } from '../collector';
import { getGlobalTracer } from '../tracing/global';
import type { SpanLike } from '../tracing/span';
import type { TracerProtocol } from '../tracing/tracer';
import { cutText } from '../../text/cut';

/** Queries tracked at once; beyond it the oldest is ended as `abandoned` (knex lost its answer). */
export const MAX_IN_FLIGHT_QUERIES = 10_000;
/** SQL text kept on a span, in characters. */
export const MAX_STATEMENT_LENGTH = 2048;

/** Options of {@link instrumentDatabase}. */
export interface InstrumentDatabaseOptions {
  tracer?: TracerProtocol;
  collector?: MetricsCollectorProtocol;
  /** `db.system` attribute; default `postgresql`. */
  system?: string;
  maxInFlight?: number;
}

interface QueryData {
  __knexQueryUid?: string;
  sql?: string;
  method?: string;
}

interface InFlight {
  span: SpanLike;
  started: number;
  operation: string;
}

/** Stops the instrumentation. */
export type Uninstrument = () => void;

/** Instruments every query of `knex`; returns a function that removes the instrumentation. */
export function instrumentDatabase(knex: Knex, options: InstrumentDatabaseOptions = {}): Uninstrument {
  const collector = options.collector ?? new NoopMetricsCollector();
  const system = options.system ?? 'postgresql';
  const max = options.maxInFlight ?? MAX_IN_FLIGHT_QUERIES;
  const inFlight = new Map<string, InFlight>();

  const finish = (uid: string | undefined, outcome: 'ok' | 'error' | 'abandoned', err?: unknown) => {
    if (!uid) return;
    const q = inFlight.get(uid);
    if (!q) return;
    inFlight.delete(uid);
    if (err !== undefined) q.span.recordException(err);
    else if (outcome === 'abandoned') q.span.setStatus({ code: 'ERROR', description: 'abandoned' });
    q.span.end();
    const labels = { operation: q.operation, outcome };
    collector.increment('db.queries', 1, labels);
    collector.histogram('db.query.duration', (performance.now() - q.started) / 1000, labels);
  };

  const onQuery = (data: QueryData) => {
    const uid = data.__knexQueryUid;
    if (!uid) return;
    const operation = (data.method ?? data.sql?.trim().split(/\s+/, 1)[0] ?? 'query').toLowerCase();
    const tracer = options.tracer ?? getGlobalTracer();
    const span = tracer.startSpan(`db.${operation}`, {
      kind: 'CLIENT',
      attributes: {
        'db.system': system,
        'db.operation': operation,
        'db.statement': cutText(data.sql ?? '', MAX_STATEMENT_LENGTH),
      },
    });
    if (inFlight.size >= max) finish(inFlight.keys().next().value, 'abandoned');
    inFlight.set(uid, { span, started: performance.now(), operation });
  };
  const onResponse = (_response: unknown, data: QueryData) => finish(data.__knexQueryUid, 'ok');
  const onError = (err: unknown, data: QueryData) => finish(data.__knexQueryUid, 'error', err);

  knex.on('query', onQuery);
  knex.on('query-response', onResponse);
  knex.on('query-error', onError);
  return () => {
    knex.removeListener('query', onQuery);
    knex.removeListener('query-response', onResponse);
    knex.removeListener('query-error', onError);
    for (const uid of [...inFlight.keys()]) finish(uid, 'abandoned');
  };
}
