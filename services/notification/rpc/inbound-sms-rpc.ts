/**
 * The InboundSmsService RPC (gRPC and Connect): WatchInboundSms over the inbound SMS log's hub
 * (channels/sms/inbound-watch-hub.ts). Only translation here: the cursor rule, the caps and the
 * replay-then-live rule are the hub's; the `sms:inbound` scope is checked by the RPC kit.
 */
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import {
  InboundSmsEventType,
  type InboundSmsService,
  type WatchInboundSmsRequest,
  type WatchInboundSmsResponseSchema,
} from '../../../shared/gen/svc/notification/v1/inbound_sms_pb';
import { callerKey } from '../../../shared/rpc/context';
import type { InboundSmsFrame, InboundSmsWatchHub } from '../channels/sms/inbound-watch-hub';

/** A hub frame as WatchInboundSms sends it. */
export function toWireInboundFrame(
  frame: InboundSmsFrame,
): MessageInitShape<typeof WatchInboundSmsResponseSchema> {
  if (frame.type !== 'message') {
    return {
      id: String(frame.id),
      type: frame.type === 'live' ? InboundSmsEventType.LIVE : InboundSmsEventType.RESET,
    };
  }
  const m = frame.message;
  return {
    id: String(frame.id),
    type: InboundSmsEventType.MESSAGE,
    backend: m.backend,
    from: m.from,
    to: m.to,
    body: m.body,
    receivedAt: timestampFromDate(m.receivedAt),
  };
}

/** InboundSmsService. */
export class InboundSmsRpc implements ServiceImpl<typeof InboundSmsService> {
  constructor(private readonly hub: InboundSmsWatchHub) {}

  async *watchInboundSms(req: WatchInboundSmsRequest, ctx: HandlerContext) {
    const frames = this.hub.watch(ctx.values.get(callerKey), {
      afterId: req.afterId || undefined,
      signal: ctx.signal,
    });
    for await (const frame of frames) yield toWireInboundFrame(frame);
    // The watch ends quietly when its signal aborts; tell the client why (cancelled, deadline, or
    // UNAVAILABLE at shutdown, after which it reconnects with its last id).
    if (ctx.signal.aborted) throw ctx.signal.reason;
  }
}
