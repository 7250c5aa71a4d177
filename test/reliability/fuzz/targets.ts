/**
 * The two services as the fuzzer meets them: started in-process on free ports with every optional
 * area switched on (API tokens, admin JWTs, an SMS gateway, an http_api mailer with signed event
 * webhooks, an APNs backend), each backend pointed at the local stand-in that speaks its provider's
 * protocol, so random requests reach past "no such backend" into the real validation and drivers.
 * Request limits are lowered to 256 KiB so the fuzzer's oversized inputs cost little to send.
 */
import {
  FAST_DELIVERY,
  startNotificationApp,
  type RunningNotificationApp,
} from '../../support/notification-app';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';
import { startV3Peer, eventWebhookKeys, type V3Peer } from '../../notification/channels/email/v3-peer';
import { gatewayConfig, startTwilioPeer, type TwilioPeer } from '../../notification/channels/sms/twilio-peer';
import { ecKeys, startApnsPeer, type ApnsPeer } from '../../notification/channels/push/push-peers';

/** The RPC bearer token both services require. */
export const API_TOKEN = 'fuzz-api-token-0123456789abcdef';

/** The admin gateway's HS256 secret (tokens signed with it are valid admin JWTs). */
export const ADMIN_JWT_SECRET = 'fuzz-admin-jwt-secret-0123456789abcdef';

/** The largest request either port accepts in the fuzz config. */
export const MAX_REQUEST_BYTES = 256 * 1024;

/** The notification service and the provider stand-ins behind it. */
export interface NotificationTarget {
  readonly n: RunningNotificationApp;
  close(): Promise<void>;
}

/** Starts the notification service with all its areas on, behind local provider stand-ins. */
export async function startNotificationTarget(): Promise<NotificationTarget> {
  const v3: V3Peer = await startV3Peer();
  const twilio: TwilioPeer = await startTwilioPeer();
  const apnsKeys = ecKeys();
  const apns: ApnsPeer = await startApnsPeer({
    publicKey: apnsKeys.publicKey,
    keyId: 'KEY1234567',
    teamId: 'TEAM123456',
    topic: 'com.example.fuzz',
  });
  const peers = () => Promise.all([v3.close(), twilio.close(), apns.close()]);
  const n = await startNotificationApp({
    server: { api_tokens: [API_TOKEN], max_request_bytes: MAX_REQUEST_BYTES },
    delivery: { ...FAST_DELIVERY, max_attempts: 2 },
    admin: { auth: { jwt_secret: ADMIN_JWT_SECRET } },
    webhooks: { public_base_url: 'http://notification.example.com', max_body_bytes: 64 * 1024 },
    mailer: {
      max_message_bytes: 128 * 1024,
      max_attachment_bytes: 64 * 1024,
      backends: [
        {
          name: 'sendgrid',
          primary: true,
          driver: 'http_api',
          from_email: 'fuzz@sender.example.com',
          http_api: {
            base_url: v3.baseUrl,
            api_key: 'SG.fuzz-secret-key',
            event_webhook_public_key: eventWebhookKeys().publicKey,
          },
        },
      ],
    },
    sms_backends: [{ name: 'twilio', sms_gateway: gatewayConfig(twilio) }],
    push_backends: [
      {
        name: 'apns',
        driver: 'push_driver_b',
        push_driver_b: {
          key_id: 'KEY1234567',
          team_id: 'TEAM123456',
          private_key: apnsKeys.privatePem,
          topic: 'com.example.fuzz',
          base_url: apns.baseUrl,
        },
      },
    ],
  }).catch(async (err: unknown) => {
    await peers();
    throw err;
  });
  return {
    n,
    async close() {
      await n.close();
      await peers();
    },
  };
}

/** Starts the monitor with tokens on and the fuzz request limit. */
export function startMonitorTarget(): Promise<RunningMonitorApp> {
  return startMonitorApp({
    server: { api_tokens: [API_TOKEN], max_request_bytes: MAX_REQUEST_BYTES },
  });
}
