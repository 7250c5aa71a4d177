/**
 * The monitor's client of the notification service: SendEmail and SendSms of
 * svc.notification.v1.NotificationService over gRPC (the one outbound stack, shared/rpc/client.ts: a
 * Connect client over grpc-js), with the channel's API token
 * (`authorization: Bearer`), the caller's trace context (`traceparent`) and a deadline per call. It
 * implements the alerts area's {@link AlertNotifier}: the wire stays here, and a failed call becomes
 * an {@link AlertNotifierError} naming the code and whether another attempt may help.
 */
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import { context, propagation } from '@opentelemetry/api';
import { NotificationService } from '../../../shared/gen/svc/notification/v1/notification_pb';
import { NotifyService, SkipReason } from '../../../shared/gen/svc/notification/v1/notify_pb';
import { TemplateChannel } from '../../../shared/gen/svc/notification/v1/templates_pb';
import { UserService } from '../../../shared/gen/svc/notification/v1/users_pb';
import { type Pager, PagerError, type PageRequest, type PageResult } from '../oncall/pager';
import { createGrpcClient, type GrpcClient } from '../../../shared/rpc/client';
import { connectCodeName } from '../../../shared/http/errors';
import {
  type AlertEmail,
  type AlertNotifier,
  AlertNotifierError,
  type AlertSms,
} from '../alerts/alert-notifier';
import type { NotificationChannelConfig } from '../alerts/config';
// Issue 28 (O3): the inbound SMS stream, for the on-call area's `ACK <code>` consumer.
import { timestampDate } from '@bufbuild/protobuf/wkt';
import {
  InboundSmsEventType,
  InboundSmsService,
} from '../../../shared/gen/svc/notification/v1/inbound_sms_pb';
import type { InboundSmsSource, InboundSmsStreamFrame } from '../oncall/inbound-sms';

/** Codes worth another attempt with the same key. */
const RETRYABLE = new Set<Code>([
  Code.Unavailable,
  Code.DeadlineExceeded,
  Code.ResourceExhausted,
  Code.Aborted,
  Code.Internal,
  Code.Unknown,
]);

/** A NotificationService client for one `notification` alert channel. */
export class NotificationClient implements AlertNotifier, InboundSmsSource {
  private readonly client: Client<typeof NotificationService>;
  private readonly rpc: GrpcClient<typeof NotificationService>;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;
  private readonly address: string;
  /** InboundSmsService, opened by the first watchInboundSms. */
  private inboundRpc: GrpcClient<typeof InboundSmsService> | undefined;

  constructor(
    settings: Pick<NotificationChannelConfig['notification'], 'grpc_address' | 'api_token' | 'timeout_ms'>,
  ) {
    this.address = settings.grpc_address;
    this.rpc = createGrpcClient(NotificationService, { address: settings.grpc_address });
    this.client = this.rpc.client;
    this.headers = settings.api_token ? { authorization: `Bearer ${settings.api_token}` } : {};
    this.timeoutMs = settings.timeout_ms;
  }

  async sendEmail(email: AlertEmail): Promise<void> {
    await this.call(() =>
      this.client.sendEmail(
        {
          to: [email.to],
          subject: email.subject,
          text: email.text,
          backend: email.backend ?? '',
          idempotencyKey: email.idempotencyKey,
        },
        this.callOptions(),
      ),
    );
  }

  async sendSms(sms: AlertSms): Promise<void> {
    await this.call(() =>
      this.client.sendSms(
        { to: sms.to, body: sms.body, backend: sms.backend ?? '', idempotencyKey: sms.idempotencyKey },
        this.callOptions(),
      ),
    );
  }

  /** The token, plus the active span's context (`traceparent`) for the notification service. */
  private callOptions(): { headers: Record<string, string>; timeoutMs: number } {
    const headers = { ...this.headers };
    propagation.inject(context.active(), headers);
    return { headers, timeoutMs: this.timeoutMs };
  }

  private async call(send: () => Promise<unknown>): Promise<void> {
    try {
      await send();
    } catch (err) {
      const code = ConnectError.from(err).code;
      // Only the code: the message of a peer is not ours to pass on, and may echo what we sent.
      throw new AlertNotifierError(
        `the notification service answered ${Code[code]}`,
        Code[code],
        RETRYABLE.has(code),
      );
    }
  }

  /**
   * WatchInboundSms of InboundSmsService (issue 28): the replies after `afterId` (empty: start live),
   * then live ones, as the on-call area's frames. No deadline (the stream stays open); `signal` ends
   * it. A failure is the ConnectError as it came (the consumer logs its code and reconnects).
   */
  async *watchInboundSms(afterId: string, signal: AbortSignal): AsyncGenerator<InboundSmsStreamFrame> {
    this.inboundRpc ??= createGrpcClient(InboundSmsService, { address: this.address });
    const frames = this.inboundRpc.client.watchInboundSms(
      { afterId },
      { signal, headers: { ...this.headers } },
    );
    for await (const f of frames) {
      if (f.type === InboundSmsEventType.MESSAGE) {
        yield {
          type: 'message',
          message: {
            id: Number(f.id),
            backend: f.backend,
            from: f.from,
            to: f.to,
            body: f.body,
            receivedAt: f.receivedAt ? timestampDate(f.receivedAt) : new Date(0),
          },
        };
      } else if (f.type === InboundSmsEventType.LIVE || f.type === InboundSmsEventType.RESET) {
        yield { type: f.type === InboundSmsEventType.LIVE ? 'live' : 'reset', id: Number(f.id) };
      }
    }
  }

  /** Closes the connections to the notification service. */
  close(): void {
    this.rpc.close();
    this.inboundRpc?.close();
  }
}

/** The on-call paging settings this client needs (`monitor.oncall.paging`). */
export interface PagingClientSettings {
  grpc_address: string;
  api_token: string;
  timeout_ms: number;
}

/**
 * The escalation engine's {@link Pager}: Notify (NotifyService) with a required category and an
 * idempotency key, and GetUser (UserService) for the phones a page's SMS code is good from. Same
 * stack, token and trace context as {@link NotificationClient}; a failed call becomes a
 * {@link PagerError} naming the code only.
 */
export class NotificationPager implements Pager {
  private readonly notify: GrpcClient<typeof NotifyService>;
  private readonly users: GrpcClient<typeof UserService>;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;

  constructor(settings: PagingClientSettings) {
    this.notify = createGrpcClient(NotifyService, { address: settings.grpc_address });
    this.users = createGrpcClient(UserService, { address: settings.grpc_address });
    this.headers = settings.api_token ? { authorization: `Bearer ${settings.api_token}` } : {};
    this.timeoutMs = settings.timeout_ms;
  }

  async userPhones(userId: string): Promise<string[]> {
    const res = await this.call(() => this.users.client.getUser({ userId }, this.callOptions()));
    return [...(res.user?.phones ?? [])];
  }

  async page(request: PageRequest): Promise<PageResult> {
    const res = await this.call(() =>
      this.notify.client.notify(
        {
          userId: request.userId,
          category: request.category,
          data: { ...request.data },
          idempotencyKey: request.idempotencyKey,
        },
        this.callOptions(),
      ),
    );
    const channels = (res.notification?.channels ?? [])
      .filter((c) => c.skipped === SkipReason.UNSPECIFIED)
      .map((c) => TemplateChannel[c.channel].toLowerCase());
    return {
      notificationId: res.notification?.id ?? '',
      channels: [...new Set(channels)],
      created: res.created,
    };
  }

  private callOptions(): { headers: Record<string, string>; timeoutMs: number } {
    const headers = { ...this.headers };
    propagation.inject(context.active(), headers);
    return { headers, timeoutMs: this.timeoutMs };
  }

  private async call<T>(send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (err) {
      const code = ConnectError.from(err).code;
      throw new PagerError(
        `the notification service answered ${connectCodeName(code)}`,
        connectCodeName(code),
        RETRYABLE.has(code),
      );
    }
  }

  /** Closes the connections. */
  close(): void {
    this.notify.close();
    this.users.close();
  }
}
