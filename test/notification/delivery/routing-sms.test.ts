/**
 * Failover and the circuit breaker on the SMS channel, with the real sms_gateway driver against two
 * local Twilio-style peers: routing is channel-neutral, and this proves it beyond email.
 */
import { Registry } from 'prom-client';
import { SmsGatewayDriverConfigSchema } from '../../../services/notification/channels/sms/config';
import { SmsGatewayDriver } from '../../../services/notification/channels/sms/sms-gateway-driver';
import { InMemoryDeliveryStore } from '../../../services/notification/delivery/memory-store';
import { DeliveryPipeline } from '../../../services/notification/delivery/pipeline';
import { gatewayConfig, startTwilioPeer, twilioError, type TwilioPeer } from '../channels/sms/twilio-peer';
import { ManualClock, lookupOf, pollAndSettle, testConfig } from './support';

describe('SMS routing with the real sms_gateway driver', () => {
  let peers: TwilioPeer[];
  let drivers: SmsGatewayDriver[];

  beforeEach(async () => {
    peers = [await startTwilioPeer(), await startTwilioPeer()];
    drivers = peers.map(
      (peer, i) =>
        new SmsGatewayDriver({
          name: i === 0 ? 'sms-primary' : 'sms-second',
          config: SmsGatewayDriverConfigSchema.parse(gatewayConfig(peer)),
        }),
    );
  });

  afterEach(async () => {
    for (const d of drivers) await d.close();
    for (const p of peers) await p.close();
  });

  it('when the primary answers 503, fallback sends through the second backend and the circuit opens, then closes', async () => {
    const registry = new Registry();
    const clock = new ManualClock();
    const pipeline = new DeliveryPipeline({
      store: new InMemoryDeliveryStore(),
      lookup: lookupOf(...drivers),
      config: testConfig({
        routing: { email: 'primary', sms: 'fallback', push: 'primary' },
        circuit_breaker: { failure_threshold: 2, cooldown_seconds: 30 },
      }),
      clock: clock,
      random: () => 0.5,
      registry,
    });
    const sms = (to: string) =>
      pipeline.submit({
        channel: 'sms',
        recipient: to,
        payload: { to, body: 'code 123456', from: '+15550001111' },
        scope: 's',
      });
    peers[0]!.script.push(twilioError(503, 20500, 'unavailable'), twilioError(503, 20500, 'unavailable'));
    const first = await sms('+15551230001');
    const second = await sms('+15551230002');
    await pollAndSettle(pipeline); // both fail on the primary: its circuit opens
    await pollAndSettle(pipeline); // both go through the second backend
    for (const { delivery } of [first, second]) {
      const d = await pipeline.get(delivery.id);
      expect(d).toMatchObject({ status: 'sent', backend: 'sms-second' });
      expect(d.attempts.map((a) => [a.backend, a.outcome])).toEqual([
        ['sms-primary', 'retryable'],
        ['sms-second', 'sent'],
      ]);
    }
    expect(peers[1]!.requests.map((r) => r.form.To).sort()).toEqual(['+15551230001', '+15551230002']);
    expect(await registry.metrics()).toContain(
      'delivery_circuit_state{channel="sms",backend="sms-primary"} 2',
    );

    // After the cool-down, the half-open trial goes to the primary (201 now) and closes the circuit.
    clock.advance(30_000);
    const trial = await sms('+15551230003');
    await pollAndSettle(pipeline);
    expect(await pipeline.get(trial.delivery.id)).toMatchObject({ status: 'sent', backend: 'sms-primary' });
    expect(pipeline.breakers.state('sms', 'sms-primary')).toBe('closed');
  });
});
