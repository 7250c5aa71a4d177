import { MetricsCollector } from '../../../../shared/monitoring/collector';
import type { Histogram } from '../../../../shared/monitoring/instruments';
import { defaultMeteredName, metered } from '../../../../shared/monitoring/instrumentation/metered';
import {
  configureInstrumentation,
  instrumentationDefaults,
} from '../../../../shared/monitoring/instrumentation/wrap-callable';
import { captureLogger, FakeClock } from '../helpers';

function observations(collector: MetricsCollector, name: string): number[] {
  return (collector.getMetric(name) as Histogram | undefined)?.getObservations() ?? [];
}

describe('metered as a function wrapper', () => {
  it('records the execution time of a sync function in seconds under the given name', () => {
    const clock = new FakeClock();
    const collector = new MetricsCollector();
    const add = metered('calc.add', { collector, clock })((a: number, b: number) => {
      clock.advance(250);
      return a + b;
    });
    expect(add(2, 3)).toBe(5);
    expect(observations(collector, 'calc.add')).toEqual([0.25]);
  });

  it('times an async function until its promise settles, and a rejected call too', async () => {
    const clock = new FakeClock();
    const collector = new MetricsCollector();
    const fetchUser = metered('users.fetch', { collector, clock })(async (id: string) => {
      await Promise.resolve();
      clock.advance(40);
      if (id === 'bad') throw new RangeError('no such user');
      return { id };
    });
    await expect(fetchUser('u1')).resolves.toEqual({ id: 'u1' });
    await expect(fetchUser('bad')).rejects.toThrow(RangeError);
    expect(observations(collector, 'users.fetch')).toEqual([0.04, 0.04]);
  });

  it('a sync throw is timed and rethrown unchanged', () => {
    const collector = new MetricsCollector();
    const boom = new TypeError('boom');
    const fails = metered('op', { collector })(() => {
      throw boom;
    });
    expect(() => fails()).toThrow(boom);
    expect(observations(collector, 'op')).toHaveLength(1);
  });

  it('defaults the name to {service}.{function name}.duration', () => {
    const collector = new MetricsCollector();
    function sendDigest(): string {
      return 'sent';
    }
    metered(null, { collector, service: 'mail' })(sendDigest)();
    metered(undefined, { collector })(sendDigest)();
    expect(observations(collector, 'mail.sendDigest.duration')).toHaveLength(1);
    expect(observations(collector, 'sendDigest.duration')).toHaveLength(1);
    expect(defaultMeteredName('Svc.run')).toBe('Svc.run.duration');
  });

  it('a collector that refuses the record does not break the call; the failure is logged once', () => {
    const { logger, lines } = captureLogger();
    const collector = new MetricsCollector();
    collector.increment('taken');
    const f = metered('taken', { collector, logger })(() => 'result');
    expect(f()).toBe('result');
    expect(f()).toBe('result');
    expect(lines.filter((l) => l.msg === 'metered: recording the duration failed')).toHaveLength(1);
  });

  it('uses the instrumentation default collector, read at call time', () => {
    const before = instrumentationDefaults().collector;
    const collector = new MetricsCollector();
    const f = metered('late.bound')(() => 1);
    configureInstrumentation({ collector });
    try {
      f();
    } finally {
      configureInstrumentation({ collector: before });
    }
    expect(observations(collector, 'late.bound')).toHaveLength(1);
  });
});

describe('metered as a decorator', () => {
  it('names the metric {Class}.{method}.duration and keeps this', async () => {
    const collector = new MetricsCollector();
    class Mailer {
      constructor(private readonly from: string) {}
      @metered(null, { collector, service: 'notification' })
      async send(to: string): Promise<string> {
        return `${this.from}->${to}`;
      }
      @metered()
      static ping(): string {
        return 'pong';
      }
    }
    await expect(new Mailer('a').send('b')).resolves.toBe('a->b');
    expect(observations(collector, 'notification.Mailer.send.duration')).toHaveLength(1);
    expect(Mailer.ping()).toBe('pong');
  });

  it('follows the TypeScript 5 standard decorator protocol', () => {
    const collector = new MetricsCollector();
    const context = {
      kind: 'method',
      name: 'work',
      static: false,
      private: false,
    } as unknown as ClassMethodDecoratorContext;
    class Job {
      n = 2;
    }
    const method = function (this: Job, x: number): number {
      return this.n * x;
    };
    const decorated = metered(null, { collector })(method, context);
    expect(decorated.call(new Job(), 5)).toBe(10);
    expect(observations(collector, 'Job.work.duration')).toHaveLength(1);
  });
});
