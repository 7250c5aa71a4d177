import { create, equals, fromBinary, isMessage, toBinary } from '@bufbuild/protobuf';
import { TimestampSchema, timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { GetInboxResponseSchema, InboxMessageSchema } from '../../../shared/gen/svc/notification/v1/inbox_pb';
import { toWireMessage, wireTimestamp } from '../../../services/notification/rpc/inbox-rpc';
import type { InboxMessage } from '../../../services/notification/inbox';

// toWireMessage builds protobuf message objects by hand (no reflective create(), for the read
// path's speed): these tests hold it to exactly what create() would have built.

const unread: InboxMessage = {
  id: '0b7e8f0e-1d5a-4c1b-9d8e-4b1c2d3e4f50',
  userId: 'alice',
  title: 'Order 7 shipped',
  body: 'On its way: ünïcødé ✓',
  metadata: { orderId: 7, kind: 'shipping', nested: { list: [1, 'two', null, true] } },
  readAt: null,
  createdAt: new Date('2026-11-23T02:35:48.123Z'),
};
const read: InboxMessage = { ...unread, readAt: new Date('2026-11-23T04:35:48.999Z') };

function viaCreate(m: InboxMessage) {
  return create(InboxMessageSchema, {
    id: m.id,
    userId: m.userId,
    title: m.title,
    body: m.body,
    metadata: m.metadata as never,
    read: m.readAt !== null,
    readAt: m.readAt ? timestampFromDate(m.readAt) : undefined,
    createdAt: timestampFromDate(m.createdAt),
  });
}

describe('toWireMessage', () => {
  test.each([
    ['unread', unread],
    ['read', read],
  ])('an %s message encodes to the same bytes as the create()-built message', (_name, message) => {
    const wire = toWireMessage(message);
    expect(isMessage(wire, InboxMessageSchema)).toBe(true);
    expect(Buffer.from(toBinary(InboxMessageSchema, wire))).toEqual(
      Buffer.from(toBinary(InboxMessageSchema, viaCreate(message))),
    );
    const back = fromBinary(InboxMessageSchema, toBinary(InboxMessageSchema, wire));
    expect(back.metadata).toEqual(message.metadata);
    expect(back.read).toBe(message.readAt !== null);
    expect(timestampDate(back.createdAt!)).toEqual(message.createdAt);
    expect(back.readAt ? timestampDate(back.readAt) : null).toEqual(message.readAt);
  });

  test('sets every field of the schema, so a field added to the proto cannot be left out', () => {
    const wire = toWireMessage(read) as unknown as Record<string, unknown>;
    for (const field of InboxMessageSchema.fields) expect(wire).toHaveProperty(field.localName);
  });

  test('a page of hand-built messages inside a response encodes like a create()-built page', () => {
    const page = [unread, read, { ...unread, id: '0b7e8f0e-1d5a-4c1b-9d8e-4b1c2d3e4f51', metadata: {} }];
    const ours = create(GetInboxResponseSchema, {
      messages: page.map(toWireMessage),
      unreadCount: 2,
      nextPageToken: 'token',
    });
    const theirs = create(GetInboxResponseSchema, {
      messages: page.map(viaCreate),
      unreadCount: 2,
      nextPageToken: 'token',
    });
    expect(Buffer.from(toBinary(GetInboxResponseSchema, ours))).toEqual(
      Buffer.from(toBinary(GetInboxResponseSchema, theirs)),
    );
  });
});

describe('wireTimestamp', () => {
  test.each([0, 1, 999, 1000, -1, -999, -1000, -1500, 1_795_401_348_123, -62_135_596_800_000])(
    'equals timestampFromDate for %d ms since the epoch',
    (ms) => {
      const ours = wireTimestamp(new Date(ms));
      expect(isMessage(ours, TimestampSchema)).toBe(true);
      expect(equals(TimestampSchema, ours, timestampFromDate(new Date(ms)))).toBe(true);
      expect(ours.nanos).toBeGreaterThanOrEqual(0);
      expect(ours.nanos).toBeLessThan(1_000_000_000);
    },
  );
});
