import { Writable } from 'node:stream';
import { createLogger } from '../../../../shared/logging/logger';
import { Tracer } from '../../../../shared/monitoring/tracing';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger({ name: 't', format: 'json', destination }) };
}

describe('log lines and spans', () => {
  it('a line written inside a span carries its trace_id and span_id, also after an await', async () => {
    const { lines, logger } = capture();
    const tracer = new Tracer({ service_name: 't' });
    const span = tracer.startSpan('op');
    await tracer.withSpan(span, async () => {
      await new Promise((r) => setImmediate(r));
      logger.child({ component: 'x' }).info('inside');
    });
    const ctx = span.spanContext();
    expect(lines[0]).toMatchObject({ msg: 'inside', trace_id: ctx.traceId, span_id: ctx.spanId });
  });

  it('a line written outside any span has no trace fields', () => {
    const { lines, logger } = capture();
    logger.info('outside');
    expect(lines[0]).not.toHaveProperty('trace_id');
    expect(lines[0]).not.toHaveProperty('span_id');
  });
});
