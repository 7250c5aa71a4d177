/**
 * Fairness: a full poll (every backend with due work) runs at least every `poll_interval_ms`, whatever
 * the traffic on other backends. Targeted wake-ups (a submit, a freed slot, a failover) claim only
 * for their backend; before this rule they also pushed the full poll back, so a retrying SMS waited
 * behind a steady stream of email submits until the stream paused.
 */
import { SmsGatewayDriverConfigSchema } from '../../../services/notification/channels/sms/config';
import { SmsGatewayDriver } from '../../../services/notification/channels/sms/sms-gateway-driver';
import { InMemoryDeliveryStore } from '../../../services/notification/delivery/memory-store';
import { DeliveryPipeline } from '../../../services/notification/delivery/pipeline';
import { gatewayConfig, startTwilioPeer, twilioError, type TwilioPeer } from '../channels/sms/twilio-peer';
import { ScriptedDriver, lookupOf, testConfig } from './support';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('worker fairness', () => {
  let peer: TwilioPeer;
  let sms: SmsGatewayDriver;

  beforeEach(async () => {
    peer = await startTwilioPeer();
    sms = new SmsGatewayDriver({
      name: 'sms-primary',
      config: SmsGatewayDriverConfigSchema.parse(gatewayConfig(peer)),
    });
  });

  afterEach(async () => {
    await sms.close();
    await peer.close();
  });

  it('when email is submitted more often than the poll interval, a retrying SMS is still sent while the email stream runs', async () => {
    // Scaled down from "every 100 ms for 10 s, poll every 1 s": the stream lasts ten times the SMS's
    // backoff (100 ms at jitter 0.5) plus one poll interval (200 ms), and its submits come four times
    // per interval.
    const pollIntervalMs = 200;
    const email = new ScriptedDriver('smtp', 'email');
    const pipeline = new DeliveryPipeline({
      store: new InMemoryDeliveryStore(),
      lookup: lookupOf(email, sms),
      config: testConfig({ poll_interval_ms: pollIntervalMs, base_delay_ms: 200, max_delay_ms: 200 }),
      random: () => 0.5,
    });
    pipeline.start();
    try {
      peer.script.push(twilioError(503, 20500, 'service unavailable'));
      const code = await pipeline.submit({
        channel: 'sms',
        recipient: '+15551230001',
        payload: { to: '+15551230001', body: 'your code is 123456' },
        scope: 's',
      });

      const streamMs = 10 * (100 + pollIntervalMs);
      const periodMs = pollIntervalMs / 4;
      let emails = 0;
      let sentDuringStream = false;
      for (let elapsed = 0; elapsed < streamMs; elapsed += periodMs) {
        await pipeline.submit({
          channel: 'email',
          recipient: `u${emails}@example.com`,
          payload: { n: emails },
          scope: 's',
        });
        emails++;
        if ((await pipeline.get(code.delivery.id)).status === 'sent') sentDuringStream = true;
        await sleep(periodMs);
      }

      // The first attempt got the 503, the retry went through while email kept coming.
      expect(peer.requests).toHaveLength(2);
      expect(sentDuringStream).toBe(true);
      const record = await pipeline.get(code.delivery.id);
      expect(record.status).toBe('sent');
      expect(record.attempts.map((a) => a.outcome)).toEqual(['retryable', 'sent']);
      // The email stream itself was served all along.
      await pipeline.worker.idle();
      expect(email.calls.length).toBeGreaterThanOrEqual(emails - 1);
    } finally {
      await pipeline.stop(new Date());
    }
  });
});
