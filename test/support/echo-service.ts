/**
 * The test-only EchoService implementation used by the RPC kit's tests and benchmark.
 * Never registered by the real processes.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import type { EchoService } from '../../shared/gen/svc/testing/v1/echo_pb';
import type { EchoRequest, EchoStreamRequest } from '../../shared/gen/svc/testing/v1/echo_pb';
import { InvalidArgumentError, NotFoundError, UnavailableError } from '../../shared/errors';

async function pause(ms: number, ctx: HandlerContext): Promise<void> {
  try {
    await sleep(ms, undefined, { signal: ctx.signal });
  } catch {
    // The signal's reason is Connect's own error (deadline exceeded, cancelled, shutting down).
    throw ctx.signal.reason;
  }
}

export class EchoServiceImpl implements ServiceImpl<typeof EchoService> {
  /** Streams currently running, so tests can see that cancellation reached the handler. */
  activeStreams = 0;
  /** Streams that ended because the call was aborted. */
  abortedStreams = 0;

  async echo(req: EchoRequest, ctx: HandlerContext) {
    if (req.delayMs > 0) await pause(req.delayMs, ctx);
    switch (req.failCode) {
      case '':
        break;
      case 'NOT_FOUND':
        throw new NotFoundError('echo target not found');
      case 'INVALID_ARGUMENT':
        throw new InvalidArgumentError('message is too loud', 'message');
      case 'UNAVAILABLE':
        throw new UnavailableError('echo backend unavailable');
      default:
        // An unexpected failure whose text must never reach a caller.
        throw new Error('pg: password authentication failed for user "svc" at SELECT * FROM secrets');
    }
    // Response metadata only when asked for, so the plain call (the benchmark's) does the same wire
    // work as the raw grpc-js baseline.
    const asked = ctx.requestHeader.get('x-echo');
    if (asked !== null) {
      ctx.responseHeader.set('x-echo-served', 'yes');
      ctx.responseTrailer.set('x-echo-trailer', 'done');
    }
    return { message: req.message, headerEcho: asked ?? '' };
  }

  async *echoStream(req: EchoStreamRequest, ctx: HandlerContext) {
    this.activeStreams++;
    try {
      for (let seq = 0; req.count === 0 || seq < req.count; seq++) {
        yield { seq };
        if (req.intervalMs > 0) await pause(req.intervalMs, ctx);
        else if (ctx.signal.aborted) throw ctx.signal.reason;
      }
    } catch (err) {
      if (ctx.signal.aborted) this.abortedStreams++;
      throw err;
    } finally {
      this.activeStreams--;
    }
  }
}
