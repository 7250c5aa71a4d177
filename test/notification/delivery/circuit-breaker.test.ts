/** CircuitBreakers and BackendRouter on their own: counting rules, the one trial, round robin around open circuits. */
import { Registry } from 'prom-client';
import { CircuitBreakers, withCircuitState } from '../../../services/notification/delivery/circuit-breaker';
import { BackendRouter, primaryFirst } from '../../../services/notification/delivery/routing';
import { ManualClock, ScriptedDriver, lookupOf } from './support';

const SETTINGS = { failure_threshold: 3, cooldown_seconds: 10 };

describe('CircuitBreakers', () => {
  it('when failures are not consecutive (a permanent answer in between), the circuit stays closed', () => {
    const b = new CircuitBreakers(SETTINGS, new ManualClock());
    b.record('sms', 'tw', 'retryable');
    b.record('sms', 'tw', 'rate_limited');
    b.record('sms', 'tw', 'permanent');
    b.record('sms', 'tw', 'retryable');
    b.record('sms', 'tw', 'retryable');
    expect(b.state('sms', 'tw')).toBe('closed');
    b.record('sms', 'tw', 'rate_limited');
    expect(b.snapshot('sms', 'tw')).toMatchObject({ state: 'open', consecutive_failures: 3 });
  });

  it('when half-open, exactly one trial is let through until it reports or is cancelled', () => {
    const clock = new ManualClock();
    const b = new CircuitBreakers({ failure_threshold: 1, cooldown_seconds: 10 }, clock);
    b.record('push', 'fcm', 'retryable');
    expect(b.tryAcquire('push', 'fcm')).toBe(false);
    expect(b.retryAt('push', 'fcm').getTime()).toBe(clock.date().getTime() + 10_000);
    clock.advance(10_000);
    expect(b.tryAcquire('push', 'fcm')).toBe(true);
    expect(b.tryAcquire('push', 'fcm')).toBe(false);
    b.cancel('push', 'fcm');
    expect(b.tryAcquire('push', 'fcm')).toBe(true);
    b.record('push', 'fcm', 'sent');
    expect(b.state('push', 'fcm')).toBe('closed');
    expect(b.tryAcquire('push', 'fcm')).toBe(true);
    expect(b.tryAcquire('push', 'fcm')).toBe(true);
  });

  it('when a backend is registered, the gauge shows it closed before any attempt; open circuits degrade its health check', async () => {
    const registry = new Registry();
    const clock = new ManualClock();
    const b = new CircuitBreakers({ failure_threshold: 1, cooldown_seconds: 10 }, clock, registry);
    const check = withCircuitState(
      async () => ({ status: 'healthy' as const, details: { backend: 'relay' } }),
      b,
      'email',
      'relay',
    );
    expect(await registry.metrics()).toContain('delivery_circuit_state{channel="email",backend="relay"} 0');
    b.record('email', 'relay', 'retryable');
    const open = await check();
    expect(open).toMatchObject({
      status: 'degraded',
      details: { backend: 'relay', circuit: { state: 'open', half_open_at: expect.any(String) } },
    });
    expect(open).toHaveProperty('message', expect.stringMatching(/circuit open/));
    expect(await registry.metrics()).toContain('delivery_circuit_state{channel="email",backend="relay"} 2');
  });
});

describe('BackendRouter', () => {
  it('when round robin meets an open circuit, it skips that backend while another is available', () => {
    const clock = new ManualClock();
    const drivers = ['a', 'b', 'c'].map((n) => new ScriptedDriver(n, 'sms'));
    const breakers = new CircuitBreakers({ failure_threshold: 1, cooldown_seconds: 10 }, clock);
    const router = new BackendRouter(
      lookupOf(...drivers),
      { email: 'primary', sms: 'round_robin', push: 'primary' },
      breakers,
    );
    breakers.record('sms', 'b', 'retryable');
    const picked = Array.from({ length: 6 }, () => router.pickForNew('sms', drivers[0]!).name);
    expect(picked).not.toContain('b');
    expect(new Set(picked)).toEqual(new Set(['a', 'c']));
  });

  it('when a fallback retry wraps around the list, it is not immediate; a pinned record never moves', () => {
    const drivers = ['a', 'b'].map((n) => new ScriptedDriver(n, 'push'));
    const router = new BackendRouter(
      lookupOf(...drivers),
      { email: 'primary', sms: 'primary', push: 'fallback' },
      new CircuitBreakers(SETTINGS),
    );
    expect(router.next({ channel: 'push', backendPinned: false }, 'a')).toEqual({
      backend: 'b',
      immediate: true,
    });
    expect(router.next({ channel: 'push', backendPinned: false }, 'b')).toEqual({
      backend: 'a',
      immediate: false,
    });
    expect(router.next({ channel: 'push', backendPinned: true }, 'a')).toEqual({
      backend: 'a',
      immediate: false,
    });
  });

  it('orders a channel primary first, then the rest in config order', () => {
    expect(primaryFirst(['x', 'y', 'z'], 'y')).toEqual(['y', 'x', 'z']);
    expect(primaryFirst(['x', 'y'], undefined)).toEqual(['x', 'y']);
  });
});
