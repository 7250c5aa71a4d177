/**
 * The submit's text rules (pipeline.ts `checkText`): lengths in code points (an emoji is one
 * character), and no lone surrogate in a scope, key, recipient or backend name: the driver would
 * store U+FFFD in its place, so two different idempotency keys would become one stored key and the
 * second send would be answered as a duplicate of the first.
 */
import { InMemoryDeliveryStore } from '../../../services/notification/delivery/memory-store';
import { InvalidArgumentError } from '../../../shared/errors';
import { ScriptedDriver, buildPipeline, newBackend } from './support';

const { pipeline } = buildPipeline(new InMemoryDeliveryStore(), [
  new ScriptedDriver(newBackend('text'), 'sms'),
]);

const submit = (fields: { idempotencyKey?: string; scope?: string; recipient?: string }) =>
  pipeline.submit({
    channel: 'sms',
    recipient: fields.recipient ?? '+15550001111',
    payload: { text: 'hi' },
    scope: fields.scope ?? 's',
    ...(fields.idempotencyKey !== undefined ? { idempotencyKey: fields.idempotencyKey } : {}),
  });

test.each([
  ['idempotency_key', { idempotencyKey: 'k\ud800' }],
  ['idempotency_key', { idempotencyKey: '\udc00k' }],
  ['idempotency_key', { idempotencyKey: '🚀'.slice(0, 1) }],
  ['scope', { scope: 'team-\ud83d' }],
])('a lone surrogate in %s is INVALID_ARGUMENT naming it (%#)', async (field, fields) => {
  const err = await submit(fields).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(InvalidArgumentError);
  expect((err as InvalidArgumentError).field).toBe(field);
  expect((err as Error).message).toMatch(/lone surrogate/);
});

test('keys count code points: 256 emoji are accepted, 257 refused; two emoji keys stay two keys', async () => {
  const a = await submit({ idempotencyKey: '🚀'.repeat(256) });
  const b = await submit({ idempotencyKey: '🚀'.repeat(255) + '🛰' });
  expect(b.delivery.id).not.toBe(a.delivery.id);
  await expect(submit({ idempotencyKey: '🚀'.repeat(257) })).rejects.toThrow(
    'idempotency_key is longer than 256 characters',
  );
});
