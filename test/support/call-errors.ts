/** The error a call that must fail failed with, for tests that assert its code and message. */
import type * as grpc from '@grpc/grpc-js';
import { ConnectError } from '@connectrpc/connect';

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
