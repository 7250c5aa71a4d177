/** The error a call that must fail failed with, for tests that assert its code and message. */
import type * as grpc from '@grpc/grpc-js';
import { ConnectError } from '@connectrpc/connect';
import { InvalidArgumentError } from '../../shared/errors';

/** The grpc-js error `p` rejected with; throws when it resolved. */
export async function grpcError(p: Promise<unknown>): Promise<grpc.ServiceError> {
  try {
    await p;
  } catch (err) {
    return err as grpc.ServiceError;
  }
  throw new Error('expected the call to fail');
}

/** The Connect error `p` rejected with (any rejection, as ConnectError.from reads it); throws when it resolved. */
export async function connectError(p: Promise<unknown>): Promise<ConnectError> {
  try {
    await p;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error('expected the call to fail');
}

/** The InvalidArgumentError `run` threw (sync) or rejected with (async); throws on anything else. */
export function invalidArgument(run: () => unknown): InvalidArgumentError;
export function invalidArgument(run: () => Promise<unknown>): Promise<InvalidArgumentError>;
export function invalidArgument(run: () => unknown): InvalidArgumentError | Promise<InvalidArgumentError> {
  const check = (err: unknown): InvalidArgumentError => {
    if (err instanceof InvalidArgumentError) return err;
    throw new Error(`expected InvalidArgumentError, got ${String(err)}`);
  };
  let result: unknown;
  try {
    result = run();
  } catch (err) {
    return check(err);
  }
  if (result instanceof Promise)
    return result.then(
      () => check(undefined),
      (err: unknown) => check(err),
    );
  return check(undefined);
}
