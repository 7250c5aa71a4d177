/**
 * Random and boundary request messages for any RPC, generated from its descriptor (protoc-gen-es's
 * `DescMessage`), so a new RPC or a new field is fuzzed without anyone writing a generator for it.
 *
 * The generator writes protobuf bytes itself (`BinaryWriter`) rather than building a message and
 * calling `toBinary`: that is how a string field can carry bytes that are not UTF-8, an enum a number
 * the schema does not know, and a `google.protobuf.Struct` a nesting deeper than any sane client would
 * send. Everything it writes is otherwise well-formed protobuf (valid tags, lengths and wire types):
 * malformed framing is the interop suite's and `test/shared/rpc/malformed.test.ts`'s subject.
 */
import {
  fromBinary,
  ScalarType,
  toJsonString,
  type DescField,
  type DescMessage,
  type DescOneof,
} from '@bufbuild/protobuf';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import fc from 'fast-check';

/** One generated request: its protobuf bytes (`jsonOf` gives its JSON form when it has one). */
export interface FuzzInput {
  /** The request as protobuf bytes (gRPC, Connect `application/proto`, gRPC-Web). */
  readonly bytes: Uint8Array;
  /** What was odd about it, for the failure message (e.g. "invalid UTF-8", "struct depth 120"). */
  readonly notes: readonly string[];
}

/** Sizes of the boundary cases; `soak` makes the large ones larger. */
export interface MessageLimits {
  /** Longest "huge" string or bytes value, in bytes. */
  readonly hugeBytes: number;
  /** Most elements of an "enormous" repeated field or map. */
  readonly hugeCount: number;
  /** Deepest `google.protobuf.Struct` nesting generated. */
  readonly maxStructDepth: number;
  /** Message fields nest at most this deep in the generic generator (recursion guard). */
  readonly maxDepth: number;
}

/** Default limits: a huge value passes the servers' request limits in the fuzz config (256 KiB). */
export const DEFAULT_LIMITS: MessageLimits = {
  hugeBytes: 300 * 1024,
  hugeCount: 20_000,
  maxStructDepth: 150,
  maxDepth: 3,
};

/** A chunk of encoded fields plus what was odd about it. */
interface Chunk {
  readonly bytes: Uint8Array;
  readonly notes: readonly string[];
}

const EMPTY: Chunk = { bytes: new Uint8Array(0), notes: [] };

function concat(chunks: readonly Chunk[]): Chunk {
  const total = chunks.reduce((n, c) => n + c.bytes.length, 0);
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c.bytes, at);
    at += c.bytes.length;
  }
  return { bytes, notes: chunks.flatMap((c) => c.notes) };
}

/** A string value, or raw bytes standing in for one (not UTF-8). */
type StringValue = { text: string } | { raw: Uint8Array; note: string };

/** Byte sequences that are not UTF-8: a lone continuation byte, an overlong NUL, a surrogate, 0xff. */
const NOT_UTF8: readonly number[][] = [[0x80], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xff, 0xfe], [0xc3, 0x28]];

function stringArb(limits: MessageLimits, huge: boolean): fc.Arbitrary<StringValue> {
  const options: Array<fc.WeightedArbitrary<StringValue>> = [
    { weight: 6, arbitrary: fc.string({ maxLength: 40 }).map((text) => ({ text })) },
    { weight: 2, arbitrary: fc.constant({ text: '' }) },
    {
      weight: 2,
      arbitrary: fc.string({ unit: 'binary', maxLength: 40 }).map((text) => ({ text })), // any code point, lone surrogates included (sent as U+FFFD)
    },
    {
      weight: 2,
      // Control characters, NUL, bidi overrides, a zero-width joiner, a BOM.
      arbitrary: fc
        .array(
          fc.constantFrom('\0', '\x01', '\x1b', '\x7f', '\r\n', '\t', '\u202e', '\u200d', '\ufeff', 'a'),
          {
            maxLength: 30,
          },
        )
        .map((parts) => ({ text: parts.join('') })),
    },
    {
      weight: 1,
      // Lookalikes of what the services parse: addresses, phone numbers, ids, durations, URLs.
      arbitrary: fc.constantFrom(
        ...[
          'user@example.com',
          'a@b',
          '@',
          '+15551234567',
          '+',
          '00000000-0000-0000-0000-000000000000',
          '0',
          '-1',
          '1e400',
          'NaN',
          'http://127.0.0.1:1/',
          'file:///etc/passwd',
          '../../etc/passwd',
          "' OR 1=1 --",
          '%s%n',
          '{{7*7}}',
          '<script>alert(1)</script>',
        ].map((text) => ({ text })),
      ),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(fc.constantFrom(...NOT_UTF8), fc.string({ maxLength: 8 })).map(([bad, text]) => ({
        raw: Uint8Array.from([...Buffer.from(text), ...bad]),
        note: 'invalid UTF-8',
      })),
    },
    {
      weight: 1,
      // Long: huge at the top of a request, a couple of KiB inside nested and repeated fields.
      arbitrary: fc
        .integer({ min: 1024, max: huge ? limits.hugeBytes : 2048 })
        .map((n) => ({ text: 'x'.repeat(n) })),
    },
  ];
  return fc.oneof(...options);
}

const INT32 = fc.oneof(
  fc.integer({ min: -2_147_483_648, max: 2_147_483_647 }),
  fc.constantFrom(0, -1, 1, -2_147_483_648, 2_147_483_647),
);
const UINT32 = fc.oneof(fc.nat({ max: 4_294_967_295 }), fc.constantFrom(0, 1, 4_294_967_295));
const INT64 = fc.oneof(
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
  fc.constantFrom(0n, -1n, -(2n ** 63n), 2n ** 63n - 1n, 2n ** 53n + 1n),
);
const UINT64 = fc.oneof(
  fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
  fc.constantFrom(0n, 2n ** 64n - 1n, 2n ** 53n + 1n),
);
const DOUBLE = fc.oneof(
  fc.double(),
  fc.constantFrom(0, -0, NaN, Infinity, -Infinity, Number.MAX_VALUE, -Number.MAX_VALUE, Number.MIN_VALUE),
);
const FLOAT = fc.oneof(fc.float(), fc.constantFrom(NaN, Infinity, -Infinity, 3.4028234663852886e38));

/** Writes one scalar value (tag included) of `type` at field `no`. */
function scalarArb(type: ScalarType, no: number, limits: MessageLimits, huge: boolean): fc.Arbitrary<Chunk> {
  const w = () => new BinaryWriter();
  const done = (writer: BinaryWriter, notes: readonly string[] = []): Chunk => ({
    bytes: writer.finish(),
    notes,
  });
  switch (type) {
    case ScalarType.STRING:
      return stringArb(limits, huge).map((v) =>
        'text' in v
          ? done(w().tag(no, WireType.LengthDelimited).string(v.text))
          : done(w().tag(no, WireType.LengthDelimited).bytes(v.raw), [v.note]),
      );
    case ScalarType.BYTES:
      return fc
        .oneof(
          { weight: 8, arbitrary: fc.uint8Array({ maxLength: 64 }) },
          {
            weight: 1,
            arbitrary: fc
              .integer({ min: 1024, max: huge ? limits.hugeBytes : 2048 })
              .map((n) => new Uint8Array(n)),
          },
        )
        .map((b) => done(w().tag(no, WireType.LengthDelimited).bytes(b)));
    case ScalarType.BOOL:
      return fc.boolean().map((b) => done(w().tag(no, WireType.Varint).bool(b)));
    case ScalarType.INT32:
      return INT32.map((n) => done(w().tag(no, WireType.Varint).int32(n)));
    case ScalarType.SINT32:
      return INT32.map((n) => done(w().tag(no, WireType.Varint).sint32(n)));
    case ScalarType.SFIXED32:
      return INT32.map((n) => done(w().tag(no, WireType.Bit32).sfixed32(n)));
    case ScalarType.UINT32:
      return UINT32.map((n) => done(w().tag(no, WireType.Varint).uint32(n)));
    case ScalarType.FIXED32:
      return UINT32.map((n) => done(w().tag(no, WireType.Bit32).fixed32(n)));
    case ScalarType.INT64:
      return INT64.map((n) => done(w().tag(no, WireType.Varint).int64(n)));
    case ScalarType.SINT64:
      return INT64.map((n) => done(w().tag(no, WireType.Varint).sint64(n)));
    case ScalarType.SFIXED64:
      return INT64.map((n) => done(w().tag(no, WireType.Bit64).sfixed64(n)));
    case ScalarType.UINT64:
      return UINT64.map((n) => done(w().tag(no, WireType.Varint).uint64(n)));
    case ScalarType.FIXED64:
      return UINT64.map((n) => done(w().tag(no, WireType.Bit64).fixed64(n)));
    case ScalarType.DOUBLE:
      return DOUBLE.map((n) => done(w().tag(no, WireType.Bit64).double(n)));
    case ScalarType.FLOAT:
      return FLOAT.map((n) => done(w().tag(no, WireType.Bit32).float(n)));
  }
}

/** An enum value: a known one, mostly; else a number the schema does not have. */
function enumArb(known: readonly number[], no: number): fc.Arbitrary<Chunk> {
  return fc
    .oneof(
      { weight: 4, arbitrary: fc.constantFrom(...known).map((n) => ({ n, odd: false })) },
      {
        weight: 1,
        arbitrary: fc
          .oneof(fc.constantFrom(-1, 99, 2_147_483_647, -2_147_483_648), INT32)
          .map((n) => ({ n, odd: !known.includes(n) })),
      },
    )
    .map(({ n, odd }) => ({
      bytes: new BinaryWriter().tag(no, WireType.Varint).int32(n).finish(),
      notes: odd ? [`unknown enum value ${n}`] : [],
    }));
}

function lengthDelimited(no: number, inner: Chunk): Chunk {
  return {
    bytes: new BinaryWriter().tag(no, WireType.LengthDelimited).bytes(inner.bytes).finish(),
    notes: inner.notes,
  };
}

/**
 * A `google.protobuf.Struct` nested `depth` deep ({"k": {"k": ... {}}}), each level also carrying a
 * few plain entries: deeper than protobuf decoders allow (100) at the top of the range.
 */
function deepStruct(depth: number): Chunk {
  let struct = new Uint8Array(0);
  for (let i = 0; i < depth; i++) {
    const value = new BinaryWriter().tag(5, WireType.LengthDelimited).bytes(struct).finish(); // struct_value
    struct = new BinaryWriter()
      .tag(1, WireType.LengthDelimited) // fields (map entry)
      .fork()
      .tag(1, WireType.LengthDelimited)
      .string('k')
      .tag(2, WireType.LengthDelimited)
      .bytes(value)
      .join()
      .finish();
  }
  return { bytes: struct, notes: [`struct depth ${depth}`] };
}

/** A map field of `count` distinct keys with small values: a huge label set. */
function hugeMap(field: DescField & { fieldKind: 'map' }, count: number): Chunk {
  const writer = new BinaryWriter();
  for (let i = 0; i < count; i++) {
    writer.tag(field.number, WireType.LengthDelimited).fork();
    writeMapKey(writer, field.mapKey, i);
    if (field.mapKind === 'scalar' && field.scalar === ScalarType.STRING) {
      writer.tag(2, WireType.LengthDelimited).string(`v${i}`);
    }
    writer.join();
  }
  return { bytes: writer.finish(), notes: [`${count} map entries in ${field.name}`] };
}

function writeMapKey(writer: BinaryWriter, key: ScalarType, i: number): void {
  switch (key) {
    case ScalarType.STRING:
      writer.tag(1, WireType.LengthDelimited).string(`key_${i}`);
      break;
    case ScalarType.BOOL:
      writer.tag(1, WireType.Varint).bool(i % 2 === 1);
      break;
    default:
      writer.tag(1, WireType.Varint).uint32(i);
  }
}

/** The encoded value(s) of one field, or nothing (absent). */
function fieldArb(field: DescField, limits: MessageLimits, depth: number): fc.Arbitrary<Chunk> {
  const no = field.number;
  // Huge values and enormous lists only near the top: nested under lists they would multiply.
  const huge = depth === 0;
  switch (field.fieldKind) {
    case 'scalar':
      return scalarArb(field.scalar, no, limits, huge);
    case 'enum':
      return enumArb(
        field.enum.values.map((v) => v.number),
        no,
      );
    case 'message':
      if (field.message.typeName === 'google.protobuf.Struct') {
        return fc
          .oneof(
            { weight: 3, arbitrary: messageChunkArb(field.message, limits, depth + 1) },
            {
              weight: 1,
              arbitrary: fc.integer({ min: 1, max: limits.maxStructDepth }).map((d) => deepStruct(d)),
            },
          )
          .map((inner) => lengthDelimited(no, inner));
      }
      if (depth >= limits.maxDepth) return fc.constant(lengthDelimited(no, EMPTY));
      return messageChunkArb(field.message, limits, depth + 1).map((inner) => lengthDelimited(no, inner));
    case 'list': {
      const element: fc.Arbitrary<Chunk> =
        field.listKind === 'scalar'
          ? scalarArb(field.scalar, no, limits, false)
          : field.listKind === 'enum'
            ? enumArb(
                field.enum.values.map((v) => v.number),
                no,
              )
            : depth >= limits.maxDepth
              ? fc.constant(lengthDelimited(no, EMPTY))
              : messageChunkArb(field.message, limits, depth + 1).map((inner) => lengthDelimited(no, inner));
      const few = fc.array(element, { maxLength: 5 }).map(concat);
      if (!huge) return few;
      // An enormous list: one generated element repeated (generating each would be slow), at most
      // hugeCount elements and twice hugeBytes in all.
      const enormous = fc
        .tuple(element, fc.integer({ min: 1000, max: limits.hugeCount }))
        .map(([one, wanted]): Chunk => {
          const n = Math.max(
            1,
            Math.min(wanted, Math.floor((2 * limits.hugeBytes) / Math.max(1, one.bytes.length))),
          );
          const all = concat(new Array<Chunk>(n).fill({ bytes: one.bytes, notes: [] }));
          return { bytes: all.bytes, notes: [...one.notes, `${n} elements in ${field.name}`] };
        });
      return fc.oneof({ weight: 8, arbitrary: few }, { weight: 1, arbitrary: enormous });
    }
    case 'map': {
      const key = scalarArb(field.mapKey, 1, limits, false);
      const value: fc.Arbitrary<Chunk> =
        field.mapKind === 'scalar'
          ? scalarArb(field.scalar, 2, limits, false)
          : field.mapKind === 'enum'
            ? enumArb(
                field.enum.values.map((v) => v.number),
                2,
              )
            : depth >= limits.maxDepth
              ? fc.constant(lengthDelimited(2, EMPTY))
              : messageChunkArb(field.message, limits, depth + 1).map((inner) => lengthDelimited(2, inner));
      const entry = fc.tuple(key, value).map(([k, v]) => lengthDelimited(no, concat([k, v])));
      const few = fc.array(entry, { maxLength: 5 }).map(concat);
      if (!huge) return few;
      const enormous = fc.integer({ min: 1000, max: limits.hugeCount }).map((n) => hugeMap(field, n));
      return fc.oneof({ weight: 8, arbitrary: few }, { weight: 1, arbitrary: enormous });
    }
  }
}

/** The fields of one message: each present or absent; of a oneof, at most one member. */
function messageChunkArb(desc: DescMessage, limits: MessageLimits, depth: number): fc.Arbitrary<Chunk> {
  const parts = desc.members.map((member: DescField | DescOneof) =>
    member.kind === 'oneof'
      ? fc.oneof(fc.constant(EMPTY), ...member.fields.map((f) => fieldArb(f, limits, depth)))
      : fc.option(fieldArb(member, limits, depth), { nil: undefined }).map((c) => c ?? EMPTY),
  );
  if (parts.length === 0) return fc.constant(EMPTY);
  return fc.tuple(...parts).map(concat);
}

/** Random and boundary requests of type `desc`. */
export function requestArb(
  desc: DescMessage,
  limits: MessageLimits = DEFAULT_LIMITS,
): fc.Arbitrary<FuzzInput> {
  return messageChunkArb(desc, limits, 0).map((c) => ({ bytes: c.bytes, notes: c.notes }));
}

/**
 * The canonical JSON of `bytes` as a `desc` (what a Connect JSON client would send), or undefined
 * when the bytes have no JSON form (invalid UTF-8, a Struct past the decoder's depth, a Timestamp or
 * Duration out of range, NaN in a Value).
 */
export function jsonOf(desc: DescMessage, bytes: Uint8Array): string | undefined {
  try {
    return toJsonString(desc, fromBinary(desc, bytes));
  } catch {
    return undefined;
  }
}

/** A short description of an input for a failure message. */
export function describeInput(input: FuzzInput): string {
  const notes = input.notes.length > 0 ? ` (${[...new Set(input.notes)].join(', ')})` : '';
  return `${input.bytes.length} bytes${notes}`;
}
