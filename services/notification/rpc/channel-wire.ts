/**
 * The channels on the wire: the tables between the domain's channel names (delivery/driver.ts
 * CHANNELS, notify/config.ts NOTIFY_CHANNELS) and the proto enums `Channel` and `TemplateChannel`,
 * built by name ('email' is EMAIL: protobuf-es drops the enum's prefix) rather than written out per
 * file, so a new channel needs its proto value and nothing here. A channel missing from an enum fails
 * when the module loads, not at the first call that meets it.
 */
import { Channel as WireChannel } from '../../../shared/gen/svc/notification/v1/notification_pb';
import { TemplateChannel } from '../../../shared/gen/svc/notification/v1/templates_pb';
import { CHANNELS, type Channel } from '../delivery/driver';
import { NOTIFY_CHANNELS, type NotifyChannel } from '../notify/config';

/** Both directions of one domain-to-wire table. */
export interface WireTable<D extends string, W extends number> {
  toWire: Readonly<Record<D, W>>;
  /** Wire value to domain name; an unknown or UNSPECIFIED value is absent. */
  fromWire: ReadonlyMap<W, D>;
}

/** The table of `names` in the proto enum `wire`, each found by its upper-case name. */
export function wireTableByName<D extends string, W extends number>(
  wire: object,
  names: readonly D[],
  enumName: string,
): WireTable<D, W> {
  const values = wire as Record<string, unknown>;
  const toWire = {} as Record<D, W>;
  for (const name of names) {
    const value = values[name.toUpperCase()];
    if (typeof value !== 'number' || value === 0) {
      throw new Error(`the proto enum ${enumName} has no value for the channel "${name}"`);
    }
    toWire[name] = value as W;
  }
  return { toWire, fromWire: new Map(names.map((name) => [toWire[name], name])) };
}

/** Delivery channels (SendEmail/SendSms/SendPush records, filters, suppressions). */
export const DELIVERY_CHANNEL_WIRE: WireTable<Channel, WireChannel> = wireTableByName(
  WireChannel,
  CHANNELS,
  'svc.notification.v1.Channel',
);

/** Notify's and the templates' channels (the inbox and the delivery channels) in `TemplateChannel`. */
export const TEMPLATE_CHANNEL_WIRE: WireTable<NotifyChannel, TemplateChannel> = wireTableByName(
  TemplateChannel,
  NOTIFY_CHANNELS,
  'svc.notification.v1.TemplateChannel',
);
