import { canonicalJson, contentHash } from '../../../services/notification/delivery/content-hash';
import { DeliveryConfigSchema } from '../../../services/notification/delivery/config';
import { maskRecipient } from '../../../services/notification/delivery/mask';
import { canTransition, DELIVERY_STATUSES } from '../../../services/notification/delivery/types';

describe('maskRecipient', () => {
  it.each([
    ['email', 'jane.doe@example.com', 'j***@example.com'],
    ['email', 'not-an-address', '***'],
    [
      'email',
      'jane@example.com, bob@example.org,carol@example.net',
      'j***@example.com, b***@example.org, c***@example.net',
    ],
    ['sms', '+15551234567', '+1555****567'],
    ['sms', '+1 (555) 123-4567', '+1555****567'],
    ['sms', '12345', '****'],
    ['push', 'abcdEFGHIJKLMNOPwxyz', 'abcd…wxyz'],
    ['push', 'short', '…'],
  ] as const)('when a %s recipient is %s, it is shown as %s', (channel, recipient, masked) => {
    expect(maskRecipient(channel, recipient)).toBe(masked);
  });
});

describe('contentHash', () => {
  const base = { channel: 'email', backend: 'smtp', recipient: 'a@example.com' };

  it('when two payloads differ only in key order, they hash the same', () => {
    expect(contentHash({ ...base, payload: { a: 1, b: { c: [1, { d: 2, e: 3 }] } } })).toBe(
      contentHash({ ...base, payload: { b: { c: [1, { e: 3, d: 2 }] }, a: 1 } }),
    );
    expect(canonicalJson({ b: 1, a: [{ z: 1, y: 2 }] })).toBe('{"a":[{"y":2,"z":1}],"b":1}');
  });

  it('when the payload, recipient or backend differ, the hash differs', () => {
    const h = contentHash({ ...base, payload: { a: 1 } });
    expect(contentHash({ ...base, payload: { a: 2 } })).not.toBe(h);
    expect(contentHash({ ...base, recipient: 'b@example.com', payload: { a: 1 } })).not.toBe(h);
    expect(contentHash({ ...base, backend: 'api', payload: { a: 1 } })).not.toBe(h);
  });
});

describe('delivery status transitions', () => {
  it('when a status would move backwards or out of a final state, it is refused', () => {
    expect(canTransition('pending', 'sent')).toBe(true);
    expect(canTransition('retrying', 'failed')).toBe(true);
    expect(canTransition('sent', 'delivered')).toBe(true);
    expect(canTransition('sent', 'undelivered')).toBe(true);
    expect(canTransition('sent', 'retrying')).toBe(false);
    expect(canTransition('retrying', 'pending')).toBe(false);
    for (const to of DELIVERY_STATUSES) {
      expect(canTransition('failed', to)).toBe(false);
      expect(canTransition('delivered', to)).toBe(false);
    }
  });
});

describe('DeliveryConfigSchema', () => {
  it('when the lease is not longer than the attempt timeout, the config names lease_seconds', () => {
    const result = DeliveryConfigSchema.safeParse({ lease_seconds: 30, attempt_timeout_ms: 30000 });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path).toEqual(['lease_seconds']);
  });

  it('when base_delay_ms exceeds max_delay_ms or max_attempts is over 100, the config is refused', () => {
    expect(DeliveryConfigSchema.safeParse({ base_delay_ms: 2, max_delay_ms: 1 }).success).toBe(false);
    expect(DeliveryConfigSchema.safeParse({ max_attempts: 101 }).success).toBe(false);
    expect(DeliveryConfigSchema.safeParse({ max_attempts: 100 }).success).toBe(true);
  });

  it('when backend_concurrency is given, each backend name maps to a positive count', () => {
    expect(DeliveryConfigSchema.parse({ backend_concurrency: { smtp: 2 } }).backend_concurrency).toEqual({
      smtp: 2,
    });
    expect(DeliveryConfigSchema.safeParse({ backend_concurrency: { smtp: 0 } }).success).toBe(false);
  });
});
