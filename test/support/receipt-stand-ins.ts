/**
 * The provider stand-ins the receipts tests run against, and the backend settings that point the
 * notification service at them: one home for what the receipts tests (test/notification/receipts)
 * and the receipts isolation suite (test/reliability/isolation) share. The stand-ins themselves are
 * the channel tests' peers (SendGrid v3, Twilio) and the SMTP peer.
 */
import { eventWebhookKeys, startV3Peer, type V3Peer } from '../notification/channels/email/v3-peer';
import { gatewayConfig, startTwilioPeer, type TwilioPeer } from '../notification/channels/sms/twilio-peer';
import { startSmtpPeer, type SmtpPeer } from './smtp-peer';

/**
 * The mailer backend `sendgrid`: the http_api driver against a SendGrid v3 stand-in, whose signed
 * event webhook is verified with `publicKey` (base64 DER, as `eventWebhookKeys` gives it).
 */
export function sendgridBackend(v3: Pick<V3Peer, 'baseUrl'>, publicKey: string) {
  return {
    name: 'sendgrid',
    driver: 'http_api' as const,
    from_email: 'api@sender.example.com',
    http_api: {
      base_url: v3.baseUrl,
      api_key: 'SG.secret-key-for-tests',
      event_webhook_public_key: publicKey,
    },
  };
}

/** The primary mailer backend `relay`: SMTP to a local peer, which sends no receipts. */
export function relayBackend(smtp: Pick<SmtpPeer, 'port'>) {
  return {
    name: 'relay',
    primary: true,
    driver: 'smtp' as const,
    from_email: 'noreply@sender.example.com',
    smtp: { host: '127.0.0.1', port: smtp.port, pool: false, health_cache_ms: 1 },
  };
}

/** The SMS backends of the cross-backend receipts tests. */
export const SMS_ROUTES = ['twilio-a', 'twilio-b'] as const;

/**
 * Two email backends (an SMTP relay without webhooks and a SendGrid-style http_api with signed
 * events) and two SMS backends (two Twilio accounts whose stand-ins hand out the same MessageSids),
 * all running, with the service settings that name them.
 */
export interface ReceiptStandIns {
  smtp: SmtpPeer;
  v3: V3Peer;
  twilio: Record<(typeof SMS_ROUTES)[number], TwilioPeer>;
  /** The key pair of the SendGrid event webhook: sign with `privateKey`. */
  keys: ReturnType<typeof eventWebhookKeys>;
  /** The `mailer` and `sms_backends` sections for the notification service. */
  config: {
    mailer: { backends: Array<ReturnType<typeof relayBackend> | ReturnType<typeof sendgridBackend>> };
    sms_backends: Array<{ name: string; primary?: boolean; sms_gateway: ReturnType<typeof gatewayConfig> }>;
  };
  close(): Promise<void>;
}

/** Starts the four stand-ins of the cross-backend receipts tests. */
export async function startReceiptStandIns(): Promise<ReceiptStandIns> {
  const keys = eventWebhookKeys();
  const smtp = await startSmtpPeer();
  const v3 = await startV3Peer();
  const twilio = { 'twilio-a': await startTwilioPeer(), 'twilio-b': await startTwilioPeer() };
  return {
    smtp,
    v3,
    twilio,
    keys,
    config: {
      mailer: { backends: [relayBackend(smtp), sendgridBackend(v3, keys.publicKey)] },
      sms_backends: [
        { name: 'twilio-a', primary: true, sms_gateway: gatewayConfig(twilio['twilio-a']) },
        { name: 'twilio-b', sms_gateway: gatewayConfig(twilio['twilio-b'], { from_number: '+15550002222' }) },
      ],
    },
    close: async () => {
      await Promise.all([smtp.close(), v3.close(), twilio['twilio-a'].close(), twilio['twilio-b'].close()]);
    },
  };
}
