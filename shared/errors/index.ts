/**
 * Domain errors: small typed classes with a stable code.
 *
 * Domain code throws these; only the RPC layer (shared/rpc/errors.ts) maps them to gRPC / Connect codes
 * and HTTP statuses. Anything else that escapes a handler becomes INTERNAL with a generic message, and
 * its cause is logged, never sent to the caller. Messages of these classes ARE sent to callers, so they
 * must never contain SQL, driver text, stack traces or secrets.
 */

/** Base class of every error whose message may be shown to a caller. */
export abstract class DomainError extends Error {
  /** Stable machine-readable code, also the gRPC status name it maps to. */
  abstract readonly code: DomainErrorCode;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

export type DomainErrorCode =
  | 'INVALID_ARGUMENT'
  | 'NOT_FOUND'
  | 'ALREADY_EXISTS'
  | 'UNAUTHENTICATED'
  | 'PERMISSION_DENIED'
  | 'RESOURCE_EXHAUSTED'
  | 'FAILED_PRECONDITION'
  | 'UNAVAILABLE'
  | 'DEADLINE_EXCEEDED'
  | 'UNIMPLEMENTED';

/** Bad input from the caller (HTTP 400). */
export class InvalidArgumentError extends DomainError {
  readonly code = 'INVALID_ARGUMENT' as const;
  /** Optional field path, e.g. `title`, included in the message for the caller. */
  constructor(
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

/** Missing resource, or one that belongs to someone else: the two are indistinguishable (HTTP 404). */
export class NotFoundError extends DomainError {
  readonly code = 'NOT_FOUND' as const;
}

/** A resource with that identity exists already (HTTP 409). */
export class AlreadyExistsError extends DomainError {
  readonly code = 'ALREADY_EXISTS' as const;
}

/** No or bad credentials (HTTP 401). */
export class UnauthenticatedError extends DomainError {
  readonly code = 'UNAUTHENTICATED' as const;
}

/** Credentials fine, action not allowed (HTTP 403). */
export class PermissionDeniedError extends DomainError {
  readonly code = 'PERMISSION_DENIED' as const;
}

/** Overload, a full buffer, a size limit (HTTP 429 / 413). */
export class ResourceExhaustedError extends DomainError {
  readonly code = 'RESOURCE_EXHAUSTED' as const;
}

/** The system is not in a state that allows the operation (HTTP 400). */
export class FailedPreconditionError extends DomainError {
  readonly code = 'FAILED_PRECONDITION' as const;
}

/** A dependency (database, provider) is down; the caller may retry (HTTP 503). */
export class UnavailableError extends DomainError {
  readonly code = 'UNAVAILABLE' as const;
}

/** Not built yet: scaffolding, not a feature (HTTP 501). */
export class UnimplementedError extends DomainError {
  readonly code = 'UNIMPLEMENTED' as const;
}

/** True when `err` is one of ours and its message may be shown to a caller. */
export function isDomainError(err: unknown): err is DomainError {
  return err instanceof DomainError;
}
