import { SpanContext } from '../../../../shared/monitoring/tracing/span-context';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

describe('SpanContext traceparent', () => {
  it('round-trips a sampled context through its traceparent string', () => {
    const header = `00-${TRACE}-${SPAN}-01`;
    const ctx = SpanContext.fromTraceparent(header);
    expect(ctx).not.toBeNull();
    expect(ctx!.traceId).toBe(TRACE);
    expect(ctx!.spanId).toBe(SPAN);
    expect(ctx!.sampled).toBe(true);
    expect(ctx!.isRemote).toBe(true);
    expect(ctx!.toTraceparent()).toBe(header);
  });

  it('keeps the not-sampled flag', () => {
    const ctx = SpanContext.fromTraceparent(`00-${TRACE}-${SPAN}-00`)!;
    expect(ctx.sampled).toBe(false);
    expect(ctx.toTraceparent()).toBe(`00-${TRACE}-${SPAN}-00`);
  });

  it('writes flags as two lower-case hex digits', () => {
    expect(new SpanContext(TRACE, SPAN, 1).toTraceparent()).toBe(`00-${TRACE}-${SPAN}-01`);
  });

  it.each([
    ['all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['all-zero span id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['short trace id', `00-${TRACE.slice(1)}-${SPAN}-01`],
    ['long span id', `00-${TRACE}-${SPAN}0-01`],
    ['non-hex characters', `00-${TRACE.replace('4', 'g')}-${SPAN}-01`],
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['one-digit flags', `00-${TRACE}-${SPAN}-1`],
    ['extra field on version 00', `00-${TRACE}-${SPAN}-01-extra`],
    ['missing separators', `00${TRACE}${SPAN}01`],
    ['empty string', ''],
  ])('rejects %s with null', (_what, header) => {
    expect(SpanContext.fromTraceparent(header)).toBeNull();
  });

  it('accepts a later version with extra fields (forward compatibility)', () => {
    expect(SpanContext.fromTraceparent(`01-${TRACE}-${SPAN}-01-more`)?.traceId).toBe(TRACE);
  });

  it('rejects a non-string and an oversized header', () => {
    expect(SpanContext.fromTraceparent(undefined)).toBeNull();
    expect(SpanContext.fromTraceparent(`01-${TRACE}-${SPAN}-01-${'a'.repeat(600)}`)).toBeNull();
  });
});
