/**
 * The per-submit debug line ("delivery recorded") is built only when debug is on (it runs once per
 * acknowledged send): at debug it is written with the masked recipient, never the full one; at info
 * nothing is written for a submit.
 */
import { Writable } from 'node:stream';
import { createLogger } from '../../../shared/logging/logger';
import { DeliveryPipeline } from '../../../services/notification/delivery/pipeline';
import { InMemoryDeliveryStore } from '../../../services/notification/delivery/memory-store';
import { ManualClock, ScriptedDriver, lookupOf, newBackend, testConfig } from './support';

function pipelineLoggingAt(level: string): { pipeline: DeliveryPipeline; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean))
        lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const logger = createLogger({ name: 'test', level, format: 'json', destination });
  const pipeline = new DeliveryPipeline({
    store: new InMemoryDeliveryStore(),
    lookup: lookupOf(new ScriptedDriver(newBackend('mail'), 'email')),
    config: testConfig(),
    clock: new ManualClock(),
    logger,
  });
  return { pipeline, lines };
}

const SEND = {
  channel: 'email' as const,
  recipient: 'שלום-東京😀@example.com',
  payload: { subject: '🎉 东京 مرحبا', text: 't' },
  scope: 's',
};

describe('submit log line', () => {
  it('when debug is on, a submit logs "delivery recorded" with the masked recipient only', async () => {
    const { pipeline, lines } = pipelineLoggingAt('debug');
    const { delivery } = await pipeline.submit(SEND);
    const recorded = lines.filter((l) => l.msg === 'delivery recorded');
    expect(recorded).toHaveLength(1);
    expect(recorded[0]).toMatchObject({
      deliveryId: delivery.id,
      channel: 'email',
      recipient: delivery.maskedRecipient,
    });
    expect(JSON.stringify(lines)).not.toContain(SEND.recipient);
  });

  it('when the level is info, a submit writes no line', async () => {
    const { pipeline, lines } = pipelineLoggingAt('info');
    await pipeline.submit(SEND);
    expect(lines.filter((l) => l.msg === 'delivery recorded')).toEqual([]);
  });
});
