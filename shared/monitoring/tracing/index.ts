/** Tracing: spans, span contexts and traceparent, tracers, samplers, propagation. */
export * from './span-context';
export * from './span';
export * from './context';
export * from './samplers';
export * from './propagation';
export * from './tracer';
export * from './global';
