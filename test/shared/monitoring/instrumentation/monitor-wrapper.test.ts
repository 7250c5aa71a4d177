import { monitor, MonitorLogEvent } from '../../../../shared/monitoring/instrumentation/monitor-wrapper';
import {
  configureInstrumentation,
  instrumentationDefaults,
} from '../../../../shared/monitoring/instrumentation/wrap-callable';
import { captureLogger, FakeClock } from '../helpers';

describe('monitor as a function wrapper', () => {
  it('logs operation_start and operation_end with elapsed milliseconds around a sync call', () => {
    const { logger, lines } = captureLogger();
    const clock = new FakeClock();
    const f = monitor('billing.charge', { logger, clock })((amount: number) => {
      clock.advance(12.5);
      return amount * 2;
    });
    expect(f(21)).toBe(42);
    expect(lines.map((l) => l.event)).toEqual([MonitorLogEvent.START, MonitorLogEvent.END]);
    expect(lines[0]).toMatchObject({ msg: 'operation_start', operation: 'billing.charge', level: 20 });
    expect(lines[1]).toMatchObject({ msg: 'operation_end', operation: 'billing.charge', elapsed_ms: 12.5 });
    expect(lines[0]).not.toHaveProperty('args_count');
  });

  it('logs operation_error with elapsed milliseconds and the error when an async call rejects', async () => {
    const { logger, lines } = captureLogger();
    const clock = new FakeClock();
    const f = monitor('sync.pull', { logger, clock })(async () => {
      await Promise.resolve();
      clock.advance(30);
      throw new TypeError('upstream closed');
    });
    await expect(f()).rejects.toThrow('upstream closed');
    const error = lines.find((l) => l.event === 'operation_error')!;
    expect(error).toMatchObject({ msg: 'operation_error', elapsed_ms: 30, level: 50 });
    expect((error.err as { type: string }).type).toBe('TypeError');
    expect(lines.some((l) => l.event === 'operation_end')).toBe(false);
  });

  it('with log_args logs the positional-argument count, never the values', () => {
    const { logger, lines } = captureLogger();
    const f = monitor('auth.login', { logger, log_args: true })((_user: string, _password: string) => true);
    f('alice', 'hunter2');
    expect(lines[0]).toMatchObject({ args_count: 2 });
    expect(lines[1]).toMatchObject({ args_count: 2 });
    expect(JSON.stringify(lines)).not.toContain('hunter2');
  });

  it('monitor(name, true) is short for log_args and logs through the instrumentation default logger', () => {
    const { logger, lines } = captureLogger();
    const before = instrumentationDefaults().logger;
    configureInstrumentation({ logger });
    try {
      monitor('x', true)((a: number, b: number) => a + b)(1, 2);
    } finally {
      configureInstrumentation({ logger: before });
    }
    expect(lines[0]).toMatchObject({ operation: 'x', args_count: 2 });
  });

  it('defaults the name to {service}.{function name}', () => {
    const { logger, lines } = captureLogger();
    function rebuildIndex(): void {}
    monitor(null, { logger, service: 'search' })(rebuildIndex)();
    expect(lines[0]).toMatchObject({ operation: 'search.rebuildIndex' });
  });
});

describe('monitor as a decorator', () => {
  it('names the operation {Class}.{method} and works on async methods', async () => {
    const { logger, lines } = captureLogger();
    class Inbox {
      private readonly items = ['a', 'b'];
      @monitor(null, { logger, log_args: true })
      async list(limit: number): Promise<string[]> {
        return this.items.slice(0, limit);
      }
    }
    await expect(new Inbox().list(1)).resolves.toEqual(['a']);
    expect(lines.map((l) => [l.event, l.operation, l.args_count])).toEqual([
      ['operation_start', 'Inbox.list', 1],
      ['operation_end', 'Inbox.list', 1],
    ]);
  });

  it('follows the TypeScript 5 standard decorator protocol, static methods included', () => {
    const { logger, lines } = captureLogger();
    class Reports {
      static total = 3;
    }
    const context = {
      kind: 'method',
      name: 'count',
      static: true,
      private: false,
    } as unknown as ClassMethodDecoratorContext;
    const decorated = monitor(null, { logger })(function (this: typeof Reports) {
      return this.total;
    }, context);
    expect(decorated.call(Reports)).toBe(3);
    expect(lines[1]).toMatchObject({ event: 'operation_end', operation: 'Reports.count' });
  });
});
