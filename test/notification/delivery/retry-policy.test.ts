import { RetryPolicy } from '../../../services/notification/delivery/retry-policy';

const settings = { max_attempts: 4, base_delay_ms: 1000, max_delay_ms: 10000 };
const now = new Date('2026-11-01T00:00:00.000Z');

describe('RetryPolicy', () => {
  it('when random() is at its top, the backoff ceiling doubles per attempt up to max_delay_ms', () => {
    const policy = new RetryPolicy(settings, () => 0.999999);
    expect([1, 2, 3, 4, 5, 6].map((n) => policy.backoffMs(n))).toEqual([999, 1999, 3999, 7999, 9999, 9999]);
  });

  it('when random() is 0, the jittered delay is 0 (full jitter spans the whole range)', () => {
    expect(new RetryPolicy(settings, () => 0).backoffMs(3)).toBe(0);
  });

  it('when the attempt number is huge, the ceiling stays at max_delay_ms instead of overflowing', () => {
    expect(new RetryPolicy(settings, () => 0.5).backoffMs(5000)).toBe(5000);
  });

  it('when the outcome is retryable and attempts remain, the next attempt is now + jitter', () => {
    const decision = new RetryPolicy(settings, () => 0.25).decide({ class: 'retryable' }, 2, now);
    expect(decision).toEqual({ status: 'retrying', nextAttemptAt: new Date(now.getTime() + 500) });
  });

  it('when the provider gave Retry-After, it replaces the backoff and is capped at max_delay_ms', () => {
    const policy = new RetryPolicy(settings, () => 0.99);
    expect(policy.decide({ class: 'rate_limited', retryAfterMs: 2500.2 }, 1, now).nextAttemptAt).toEqual(
      new Date(now.getTime() + 2501),
    );
    expect(policy.decide({ class: 'retryable', retryAfterMs: 86_400_000 }, 1, now).nextAttemptAt).toEqual(
      new Date(now.getTime() + 10000),
    );
    // A nonsensical Retry-After falls back to the backoff.
    expect(policy.decide({ class: 'rate_limited', retryAfterMs: -5 }, 1, now).nextAttemptAt).toEqual(
      new Date(now.getTime() + 990),
    );
  });

  it.each(['permanent', 'recipient_failure'] as const)(
    'when the outcome is %s, the delivery fails at once',
    (c) => {
      expect(new RetryPolicy(settings).decide({ class: c }, 1, now)).toEqual({
        status: 'failed',
        nextAttemptAt: null,
      });
    },
  );

  it('when the last allowed attempt is retryable, the delivery fails', () => {
    const policy = new RetryPolicy(settings);
    expect(policy.decide({ class: 'retryable' }, 3, now).status).toBe('retrying');
    expect(policy.decide({ class: 'rate_limited', retryAfterMs: 1 }, 4, now)).toEqual({
      status: 'failed',
      nextAttemptAt: null,
    });
  });

  it('when an attempt is sent, the delivery is sent with no next attempt', () => {
    expect(new RetryPolicy(settings).decide({ class: 'sent' }, 4, now)).toEqual({
      status: 'sent',
      nextAttemptAt: null,
    });
  });
});
