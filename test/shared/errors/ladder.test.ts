/**
 * One error ladder (shared/errors) with one mapping per transport: the spec's monitoring errors, the
 * config error and the OTLP decode error are rungs of it, so the gRPC/Connect mapping
 * (shared/rpc/errors.ts) and the HTTP mapping (shared/http/errors.ts) answer them without a table of
 * their own.
 */
import { Code } from '@connectrpc/connect';
import {
  AlreadyExistsError,
  DomainError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  ResourceExhaustedError,
  UnavailableError,
} from '../../../shared/errors';
import { ConfigError } from '../../../shared/config/errors';
import {
  BackendNotAvailableError,
  DuplicateSLOError,
  HealthCheckNotFoundError,
  InvalidMetricError,
  MetricLimitExceededError,
  PerformanceMonitorError,
} from '../../../shared/monitoring/errors';
import { OtlpDecodeError } from '../../../services/monitor/otlp/otlp-codec';
import { toConnectError, INTERNAL_MESSAGE } from '../../../shared/rpc/errors';
import { describeDomainError, grpcCodeOf } from '../../../shared/http/errors';

describe('the one error ladder', () => {
  it.each([
    [new InvalidMetricError('bad name'), InvalidArgumentError, Code.InvalidArgument, 400],
    [new MetricLimitExceededError('too many'), ResourceExhaustedError, Code.ResourceExhausted, 429],
    [new HealthCheckNotFoundError('db'), NotFoundError, Code.NotFound, 404],
    [new DuplicateSLOError('api'), AlreadyExistsError, Code.AlreadyExists, 409],
    [new BackendNotAvailableError('prom'), UnavailableError, Code.Unavailable, 503],
    [new PerformanceMonitorError('active'), FailedPreconditionError, Code.FailedPrecondition, 400],
    [
      new OtlpDecodeError('the body is not valid UTF-8 JSON'),
      InvalidArgumentError,
      Code.InvalidArgument,
      400,
    ],
  ])('%p is a rung of the ladder and maps on both transports', (err, rung, code, status) => {
    expect(err).toBeInstanceOf(rung);
    expect(toConnectError(err).code).toBe(code);
    expect(toConnectError(err).rawMessage).toBe(err.message);
    expect(describeDomainError(err)).toEqual({
      status,
      code: expect.any(String),
      message: err.message,
    });
  });

  it('a ConfigError (a section written in code) is bad input, with every issue in its message', () => {
    const err = new ConfigError('notification', [
      { key: 'notification.sms_backends[0].name', message: 'expected a name', source: 'code', envVar: 'X' },
    ]);
    expect(err).toBeInstanceOf(DomainError);
    expect(err.name).toBe('ConfigError');
    expect(toConnectError(err).code).toBe(Code.InvalidArgument);
    expect(toConnectError(err).rawMessage).toContain('notification.sms_backends[0].name: expected a name');
  });

  it('anything outside the ladder is INTERNAL on gRPC and has no HTTP answer of its own', () => {
    expect(toConnectError(new Error('SELECT secret')).rawMessage).toBe(INTERNAL_MESSAGE);
    expect(describeDomainError(new Error('x'))).toBeUndefined();
  });

  it('the gRPC status number of a code name comes from the one code table', () => {
    expect(grpcCodeOf('invalid_argument')).toBe(3);
    expect(grpcCodeOf('not_found')).toBe(5);
    expect(grpcCodeOf('resource_exhausted')).toBe(8);
    expect(grpcCodeOf('unimplemented')).toBe(12);
    expect(grpcCodeOf('internal')).toBe(13);
    expect(grpcCodeOf('unavailable')).toBe(14);
  });
});
