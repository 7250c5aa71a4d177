/**
 * Failover and circuit breakers with the real http_api mailers against two local SendGrid v3 peers,
 * plus the circuit gauge on /metrics and the circuit in a backend's health check.
 */
import { Registry } from 'prom-client';
import { HttpApiDriverConfigSchema } from '../../../services/notification/channels/email/config';
import { HttpApiMailer } from '../../../services/notification/channels/email/http-api-mailer';
import { withCircuitState } from '../../../services/notification/delivery/circuit-breaker';
import { InMemoryDeliveryStore } from '../../../services/notification/delivery/memory-store';
import { DeliveryPipeline } from '../../../services/notification/delivery/pipeline';
import { FROM, simpleEmail } from '../channels/email/support';
import { startV3Peer, type V3Peer } from '../channels/email/v3-peer';
import { ManualClock, lookupOf, pollAndSettle, testConfig } from './support';

describe('routing with the real http_api mailers', () => {
  let primaryPeer: V3Peer;
  let secondPeer: V3Peer;
  let mailers: HttpApiMailer[];

  beforeEach(async () => {
    primaryPeer = await startV3Peer();
    secondPeer = await startV3Peer();
    mailers = [primaryPeer, secondPeer].map(
      (peer, i) =>
        new HttpApiMailer({
          name: i === 0 ? 'api-primary' : 'api-second',
          fromEmail: FROM,
          config: HttpApiDriverConfigSchema.parse({
            base_url: peer.baseUrl,
            api_key: 'SG.key',
            timeout_ms: 2000,
          }),
        }),
    );
  });

  afterEach(async () => {
    for (const m of mailers) await m.close();
    await primaryPeer.close();
    await secondPeer.close();
  });

  function pipelineFor(registry?: Registry) {
    const clock = new ManualClock();
    const pipeline = new DeliveryPipeline({
      store: new InMemoryDeliveryStore(),
      lookup: lookupOf(...mailers),
      config: testConfig({
        routing: { email: 'fallback', sms: 'primary', push: 'primary' },
        circuit_breaker: { failure_threshold: 2, cooldown_seconds: 30 },
      }),
      clock: clock,
      random: () => 0.5,
      registry,
    });
    return { pipeline, clock };
  }

  const unavailable = { kind: 'answer' as const, status: 503, body: '{"errors":[{"message":"down"}]}' };

  it('when the primary answers 503, fallback delivers through the second backend; the circuit opens, half-opens and closes', async () => {
    const registry = new Registry();
    const { pipeline, clock } = pipelineFor(registry);
    const health = withCircuitState(
      () => mailers[0]!.checkHealth(),
      pipeline.breakers,
      'email',
      'api-primary',
    );
    primaryPeer.script.push(unavailable, unavailable);
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      ids.push(
        (
          await pipeline.submit({
            channel: 'email',
            recipient: 'to@example.com',
            payload: simpleEmail(),
            scope: 's',
          })
        ).delivery.id,
      );
    }
    await pollAndSettle(pipeline); // both fail on the primary: its circuit opens
    await pollAndSettle(pipeline); // both go through the second at once
    for (const id of ids) {
      const d = await pipeline.get(id);
      expect(d).toMatchObject({ status: 'sent', backend: 'api-second' });
      expect(d.attempts.map((a) => [a.backend, a.outcome, a.providerCode])).toEqual([
        ['api-primary', 'retryable', '503'],
        ['api-second', 'sent', '202'],
      ]);
    }
    expect(secondPeer.requests).toHaveLength(2);
    expect(await registry.metrics()).toContain(
      'delivery_circuit_state{channel="email",backend="api-primary"} 2',
    );
    const open = await health();
    expect(open.status).toBe('degraded');
    expect(open.details).toMatchObject({ circuit: { state: 'open', consecutive_failures: 2 } });

    // While open, new deliveries go around the primary without a request to it.
    const around = await pipeline.submit({
      channel: 'email',
      recipient: 'to@example.com',
      payload: simpleEmail(),
      scope: 's',
    });
    await pollAndSettle(pipeline);
    expect(primaryPeer.requests.filter((r) => r.method === 'POST')).toHaveLength(2);
    expect((await pipeline.get(around.delivery.id)).backend).toBe('api-second');

    clock.advance(30_000);
    expect(await registry.metrics()).toContain(
      'delivery_circuit_state{channel="email",backend="api-primary"} 1',
    );
    // The half-open trial goes to the primary (which answers 202 now) and closes the circuit.
    const trial = await pipeline.submit({
      channel: 'email',
      recipient: 'to@example.com',
      payload: simpleEmail(),
      scope: 's',
    });
    await pollAndSettle(pipeline);
    expect(await pipeline.get(trial.delivery.id)).toMatchObject({ status: 'sent', backend: 'api-primary' });
    expect(pipeline.breakers.state('email', 'api-primary')).toBe('closed');
    expect(await registry.metrics()).toContain(
      'delivery_circuit_state{channel="email",backend="api-primary"} 0',
    );
    expect((await health()).details).toMatchObject({ circuit: { state: 'closed', consecutive_failures: 0 } });
  });

  it('when the request names the failing backend, it is never sent elsewhere', async () => {
    const { pipeline, clock } = pipelineFor();
    primaryPeer.script.push(unavailable, {
      kind: 'answer',
      status: 401,
      body: '{"errors":[{"message":"bad key"}]}',
    });
    const { delivery } = await pipeline.submit({
      channel: 'email',
      backend: 'api-primary',
      recipient: 'to@example.com',
      payload: simpleEmail(),
      scope: 's',
    });
    await pollAndSettle(pipeline);
    clock.advance(60_000);
    await pollAndSettle(pipeline);
    expect(await pipeline.get(delivery.id)).toMatchObject({ status: 'failed', failure: 'provider_auth' });
    expect(secondPeer.requests).toHaveLength(0);
  });
});
