/**
 * The delivery channels are listed once (delivery/driver.ts CHANNELS, issue 24): the routing
 * section, Notify's channels and the wire tables derive from it, and no table spells it again in a
 * CHECK constraint. These tests fail when a second list creeps back in.
 */
import { openStorage } from '../../shared/storage/database';
import { silentLogger } from '../../shared/logging/logger';
import { Channel as WireChannel } from '../../shared/gen/svc/notification/v1/notification_pb';
import { TemplateChannel } from '../../shared/gen/svc/notification/v1/templates_pb';
import { CHANNELS } from '../../services/notification/delivery/driver';
import { DeliveryConfigSchema } from '../../services/notification/delivery/config';
import { NOTIFY_CHANNELS, NotifyConfigSchema } from '../../services/notification/notify/config';
import { NOTIFICATION_MIGRATION_SETS } from '../../services/notification/app';
import {
  DELIVERY_CHANNEL_WIRE,
  TEMPLATE_CHANNEL_WIRE,
  wireTableByName,
} from '../../services/notification/rpc/channel-wire';
import { createTestDatabase } from '../support/database';

test('the routing section has one key per channel of the list, each primary unless set', () => {
  const parsed = DeliveryConfigSchema.parse({});
  expect(Object.keys(parsed.routing).sort()).toEqual([...CHANNELS].sort());
  expect(new Set(Object.values(parsed.routing))).toEqual(new Set(['primary']));
  // A key that is not a channel is refused (the section stays strict).
  expect(() => DeliveryConfigSchema.parse({ routing: { chat: 'fallback' } })).toThrow(/chat/);
});

test("Notify's channels are the inbox and the delivery channels; caps and digests take the delivery channels only", () => {
  expect(NOTIFY_CHANNELS).toEqual(['inbox', ...CHANNELS]);
  expect(() => NotifyConfigSchema.parse({ caps: [{ channel: 'inbox', limit: 1, per: '1h' }] })).toThrow();
  for (const channel of CHANNELS) {
    expect(NotifyConfigSchema.parse({ caps: [{ channel, limit: 1, per: '1h' }] }).caps[0]!.channel).toBe(
      channel,
    );
  }
});

test('the wire tables map every channel to its own proto value and back', () => {
  const delivery = CHANNELS.map((c) => DELIVERY_CHANNEL_WIRE.toWire[c]);
  expect(new Set(delivery).size).toBe(CHANNELS.length);
  expect(delivery).not.toContain(WireChannel.UNSPECIFIED);
  for (const c of CHANNELS)
    expect(DELIVERY_CHANNEL_WIRE.fromWire.get(DELIVERY_CHANNEL_WIRE.toWire[c])).toBe(c);
  expect(DELIVERY_CHANNEL_WIRE.toWire.email).toBe(WireChannel.EMAIL);
  expect(DELIVERY_CHANNEL_WIRE.fromWire.get(WireChannel.UNSPECIFIED)).toBeUndefined();

  for (const c of NOTIFY_CHANNELS)
    expect(TEMPLATE_CHANNEL_WIRE.fromWire.get(TEMPLATE_CHANNEL_WIRE.toWire[c])).toBe(c);
  expect(TEMPLATE_CHANNEL_WIRE.toWire.inbox).toBe(TemplateChannel.INBOX);
  expect(TEMPLATE_CHANNEL_WIRE.fromWire.get(TemplateChannel.UNSPECIFIED)).toBeUndefined();
});

test('a channel the proto enum lacks fails when the table is built, naming the enum and the channel', () => {
  expect(() => wireTableByName(WireChannel, ['email', 'chat'], 'svc.notification.v1.Channel')).toThrow(
    'the proto enum svc.notification.v1.Channel has no value for the channel "chat"',
  );
  // UNSPECIFIED (0) is never a channel's value.
  expect(() => wireTableByName({ UNSPECIFIED: 0 }, ['unspecified'], 'E')).toThrow(/no value/);
});

test('after every migration no table spells the channel list in a CHECK constraint', async () => {
  const db = await createTestDatabase('channels');
  const storage = await openStorage(
    { url: db.url, data_dir: '', pool_max: 2 },
    NOTIFICATION_MIGRATION_SETS,
    silentLogger(),
  );
  try {
    const { rows } = (await storage.knex.raw(
      `SELECT conrelid::regclass::text AS table_name, conname
         FROM pg_constraint
        WHERE contype = 'c' AND pg_get_constraintdef(oid) ILIKE '%channel%'`,
    )) as { rows: { table_name: string; conname: string }[] };
    expect(rows).toEqual([]);
    // The tables still take every channel of the list (and the stores' callers validate).
    await storage.knex.raw(
      `INSERT INTO notify_cap_takes (user_id, channel, taken_at) VALUES ('u', ?, now())`,
      [CHANNELS[0]],
    );
  } finally {
    await storage.close();
    await db.drop();
  }
});
