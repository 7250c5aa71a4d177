/**
 * SMS through the real notification process, for the reliability tests: the environment that points
 * one `sms_gateway` backend at the Twilio-style stand-in (test/notification/channels/sms/twilio-peer.ts),
 * and SendSms over grpc-js with bounded concurrency, each message named by its unique body.
 */
import { gatewayConfig, type TwilioPeer } from '../notification/channels/sms/twilio-peer';
import { unary, type GenericClient } from './grpc-clients';
import { sendAll, type SendAllOptions } from './send-all';

/** The SMS backend every reliability test sends through. */
export const SMS_BACKEND = 'gateway';

/** Environment adding one `sms_gateway` backend at `peer` (the keys of `extra` on top of the test defaults). */
export function smsServiceEnv(
  peer: Pick<TwilioPeer, 'baseUrl'>,
  extra: Record<string, unknown> = {},
): Record<string, string> {
  return {
    SVC_NOTIFICATION__SMS_BACKENDS: JSON.stringify([
      { name: SMS_BACKEND, driver: 'sms_gateway', sms_gateway: gatewayConfig(peer, extra) },
    ]),
  };
}

/** What SendSms answered for one message. */
export interface SentSms {
  /** The body we gave it: unique per message in these tests, so it names the message at the peer. */
  body: string;
  deliveryId: string;
}

/** A recipient number for message `i` (E.164, distinct per message). */
export function smsNumber(i: number): string {
  return `+1555${String(1_000_000 + (i % 9_000_000))}`;
}

/**
 * Sends one SMS per body with `concurrency` SendSms calls in flight, round-robin over `clients`;
 * resolves with every acknowledged send. A failed call is thrown unless `tolerateFailures` (a crash
 * test kills the process mid-stream: its unanswered calls fail and were never acknowledged).
 */
export async function sendSmses(
  clients: GenericClient[],
  bodies: string[],
  concurrency: number,
  options: SendAllOptions<SentSms> = {},
): Promise<{ acked: SentSms[]; failed: number }> {
  return sendAll(
    bodies,
    concurrency,
    async (body, i) => {
      const { response } = await unary<{ deliveryId: string }>(
        clients[i % clients.length]!,
        'sendSms',
        { to: smsNumber(i), body },
        { deadlineMs: 30_000 },
      );
      return { body, deliveryId: response.deliveryId };
    },
    options,
  );
}
