/**
 * The one place where domain errors become RPC status codes. (The HTTP status of a code, for the
 * gateway routes, lives in shared/http/errors.ts.)
 *
 * Connect `Code` values equal gRPC status codes, so a ConnectError maps to a grpc-js status directly.
 * Unknown errors become INTERNAL with a generic message: the cause goes to the log, never to the caller.
 */
import { Metadata, type StatusObject } from '@grpc/grpc-js';
import { Code, ConnectError } from '@connectrpc/connect';
import { isDomainError, type DomainErrorCode } from '../errors';
import type { Logger } from '../logging/logger';
import { connectCodeName } from '../http/errors';
import { DATABASE_UNAVAILABLE_MESSAGE, isDatabaseUnavailable } from '../storage/unavailable';

const DOMAIN_TO_CODE: Record<DomainErrorCode, Code> = {
  INVALID_ARGUMENT: Code.InvalidArgument,
  NOT_FOUND: Code.NotFound,
  ALREADY_EXISTS: Code.AlreadyExists,
  UNAUTHENTICATED: Code.Unauthenticated,
  PERMISSION_DENIED: Code.PermissionDenied,
  RESOURCE_EXHAUSTED: Code.ResourceExhausted,
  FAILED_PRECONDITION: Code.FailedPrecondition,
  UNAVAILABLE: Code.Unavailable,
  DEADLINE_EXCEEDED: Code.DeadlineExceeded,
  UNIMPLEMENTED: Code.Unimplemented,
};

/** The message every request that does not decode gets: the parser's own words stay in the debug log. */
export const MALFORMED_MESSAGE = 'malformed request message';

/** The message every unexpected failure gets; deliberately says nothing about the cause. */
export const INTERNAL_MESSAGE = 'internal error';

/**
 * Turns anything a handler threw into a ConnectError that is safe to send. Domain errors keep their
 * message; ConnectErrors raised by the framework (deadline, cancel, limits) pass through; everything
 * unreachable database is UNAVAILABLE; everything else is logged with its cause and replaced by a
 * generic INTERNAL.
 */
export function toConnectError(
  err: unknown,
  logger?: Logger,
  context?: Record<string, unknown>,
): ConnectError {
  if (err instanceof ConnectError) return err;
  if (isDomainError(err)) return new ConnectError(err.message, DOMAIN_TO_CODE[err.code]);
  // A database that is down or restarting is a dependency outage, not a bug: UNAVAILABLE tells the
  // caller to retry (gRPC clients and proxies do), and the driver's words stay in the log.
  if (isDatabaseUnavailable(err)) {
    logger?.warn({ err, ...context }, 'database unavailable');
    return new ConnectError(DATABASE_UNAVAILABLE_MESSAGE, Code.Unavailable);
  }
  logger?.error({ err, ...context }, 'unhandled error in RPC handler');
  return new ConnectError(INTERNAL_MESSAGE, Code.Internal);
}

/** grpc-js status for a ConnectError (codes are numerically identical). */
export function toGrpcStatus(err: ConnectError): Partial<StatusObject> {
  const metadata = new Metadata();
  err.metadata.forEach((value, key) => {
    if (!key.startsWith('grpc-') && key !== 'content-type') metadata.add(key, value);
  });
  return { code: err.code as number, details: err.rawMessage, metadata };
}

/** What a call ended by its client is answered and counted as, on both ports. */
export const CLIENT_CANCELLED = new ConnectError('the client cancelled the call', Code.Canceled);

/**
 * When `signal` (the call's) was aborted by the client, the CANCELED error the call ends with;
 * otherwise undefined. A deadline or shutdown keeps its own code (the signal's reason says which),
 * and a domain error thrown anyway keeps its own. On the HTTP port a client that hangs up aborts the
 * signal with no reason (a DOMException) or with Connect's ABORTED: both mean the client left.
 */
export function cancellationOf(signal: AbortSignal, err: unknown): ConnectError | undefined {
  if (!signal.aborted || isDomainError(err)) return undefined;
  const reason: unknown = signal.reason;
  if (reason instanceof ConnectError && reason.code !== Code.Aborted && reason.code !== Code.Internal) {
    return reason;
  }
  return CLIENT_CANCELLED;
}

/** snake_case name of a code, as the Connect protocol spells it (`not_found`). */
export function codeName(code: Code): string {
  return connectCodeName(code);
}
