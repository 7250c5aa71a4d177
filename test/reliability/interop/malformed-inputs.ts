/**
 * Malformed protobuf bodies for a request message, built from its descriptor so every method gets
 * inputs that fit its own fields: truncated varints, wrong and illegal wire types, bad lengths,
 * invalid UTF-8 in each string field (nested ones and map keys and values included), and nesting far
 * past any decoder's recursion limit. Every input is malformed for a strict decoder and for a lenient
 * one alike (one that reads a field by its declared type, ignoring the wire type), so the only right
 * answer is INVALID_ARGUMENT.
 */
import { ScalarType, type DescField, type DescMessage } from '@bufbuild/protobuf';

/** One malformed body and what is wrong with it. */
export interface MalformedInput {
  readonly name: string;
  readonly body: Buffer;
}

const enum Wire {
  Varint = 0,
  Fixed64 = 1,
  Len = 2,
  StartGroup = 3,
  EndGroup = 4,
  Fixed32 = 5,
}

/** Nesting depth of the deep inputs: protobuf-es stops at 100, and any decoder should stop well before 1000. */
const DEEP = 1000;
/** How far the string-field walk descends into nested messages. */
const STRING_WALK_DEPTH = 4;
/** Bound on the invalid-UTF-8 inputs per method (OTLP requests reach hundreds of string fields). */
const MAX_UTF8_INPUTS = 24;

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}

const tag = (field: number, wire: Wire | 6 | 7): number[] => varint(field * 8 + wire);
const len = (field: number, bytes: readonly number[]): number[] => [
  ...tag(field, Wire.Len),
  ...varint(bytes.length),
  ...bytes,
];

/** The wire type a field's values are written with (a packed list of numbers aside). */
function naturalWire(field: DescField): Wire {
  const scalar =
    field.fieldKind === 'scalar' || (field.fieldKind === 'list' && field.listKind === 'scalar')
      ? field.scalar
      : undefined;
  if (field.fieldKind === 'enum' || (field.fieldKind === 'list' && field.listKind === 'enum')) {
    return Wire.Varint;
  }
  switch (scalar) {
    case undefined:
    case ScalarType.STRING:
    case ScalarType.BYTES:
      return Wire.Len; // messages, maps, strings, bytes
    case ScalarType.DOUBLE:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return Wire.Fixed64;
    case ScalarType.FLOAT:
    case ScalarType.FIXED32:
    case ScalarType.SFIXED32:
      return Wire.Fixed32;
    default:
      return Wire.Varint;
  }
}

/**
 * `field` written with a wire type it does not have, followed by bytes that also fail a decoder that
 * ignores the wire type and reads by the declared type (see each case).
 */
function wrongWireType(field: DescField): number[] {
  switch (naturalWire(field)) {
    case Wire.Len:
      // A varint where a length belongs: read as a length, 100 bytes that are not there.
      return [...tag(field.number, Wire.Varint), 100];
    case Wire.Varint:
      // Four bytes of fixed32, all with the continuation bit: read as a varint, it never ends.
      return [...tag(field.number, Wire.Fixed32), 0xff, 0xff, 0xff, 0xff];
    case Wire.Fixed64:
      // Four bytes where eight belong.
      return [...tag(field.number, Wire.Fixed32), 0, 0, 0, 0];
    default:
      // Eight bytes where four belong: read as fixed32, the rest is a tag of wire type 7.
      return [...tag(field.number, Wire.Fixed64), 0, 0, 0, 0, 0x0f, 0x0f, 0x0f, 0x0f];
  }
}

/** A step into a message-typed field: a singular or list field, or a map's value. */
interface Step {
  readonly field: DescField;
  readonly message: DescMessage;
}

function childMessage(field: DescField): DescMessage | undefined {
  if (field.fieldKind === 'message') return field.message;
  if (field.fieldKind === 'list' && field.listKind === 'message') return field.message;
  if (field.fieldKind === 'map' && field.mapKind === 'message') return field.message;
  return undefined;
}

/** Wraps `inner` (the encoded child message) into `field` of its parent. */
function wrap(field: DescField, inner: readonly number[]): number[] {
  // A map entry is a message of key (1) and value (2); the key's default is left out.
  return field.fieldKind === 'map' ? len(field.number, len(2, inner)) : len(field.number, inner);
}

function wrapPath(path: readonly Step[], inner: readonly number[]): number[] {
  let bytes = [...inner];
  for (let i = path.length - 1; i >= 0; i--) bytes = wrap(path[i]!.field, bytes);
  return bytes;
}

/** Not UTF-8: 0xc3 starts a two-byte sequence that 0x28 cannot continue. */
const BAD_UTF8 = [0xc3, 0x28];

/** Invalid UTF-8 in every string reachable from `message` (bounded walk), each on its own. */
function invalidUtf8(message: DescMessage): MalformedInput[] {
  const out: MalformedInput[] = [];
  const walk = (msg: DescMessage, path: Step[], seen: Set<string>): void => {
    for (const field of msg.fields) {
      const where = [...path.map((s) => s.field.name), field.name].join('.');
      const isString =
        (field.fieldKind === 'scalar' || (field.fieldKind === 'list' && field.listKind === 'scalar')) &&
        field.scalar === ScalarType.STRING;
      if (isString)
        out.push({
          name: `invalid UTF-8 in ${where}`,
          body: Buffer.from(wrapPath(path, len(field.number, BAD_UTF8))),
        });
      if (field.fieldKind === 'map') {
        if (field.mapKey === ScalarType.STRING) {
          const entry = len(field.number, len(1, BAD_UTF8));
          out.push({ name: `invalid UTF-8 in a key of ${where}`, body: Buffer.from(wrapPath(path, entry)) });
        }
        if (field.mapKind === 'scalar' && field.scalar === ScalarType.STRING) {
          const entry = len(field.number, len(2, BAD_UTF8));
          out.push({
            name: `invalid UTF-8 in a value of ${where}`,
            body: Buffer.from(wrapPath(path, entry)),
          });
        }
      }
      const child = childMessage(field);
      if (child && path.length + 1 < STRING_WALK_DEPTH && !seen.has(child.typeName)) {
        walk(child, [...path, { field, message: child }], new Set([...seen, child.typeName]));
      }
    }
  };
  walk(message, [], new Set([message.typeName]));
  return out.slice(0, MAX_UTF8_INPUTS);
}

/** The shortest field path from `message` into a message type that contains itself, if there is one. */
function recursion(message: DescMessage): { prefix: Step[]; cycle: Step[] } | undefined {
  const queue: Step[][] = [[]];
  while (queue.length > 0) {
    const path = queue.shift()!;
    const at = path.length === 0 ? message : path[path.length - 1]!.message;
    for (const field of at.fields) {
      const child = childMessage(field);
      if (!child) continue;
      const step = { field, message: child };
      const types = [message.typeName, ...path.map((s) => s.message.typeName)];
      const back = types.indexOf(child.typeName);
      if (back >= 0) return { prefix: path.slice(0, back), cycle: [...path.slice(back), step] };
      if (path.length < 6) queue.push([...path, step]);
    }
  }
  return undefined;
}

/** Every malformed input for a method taking `message`. */
export function malformedInputs(message: DescMessage): MalformedInput[] {
  const inputs: MalformedInput[] = [
    { name: 'a truncated tag varint', body: Buffer.from([0x80]) },
    { name: 'a truncated varint value', body: Buffer.from([...tag(1, Wire.Varint), 0xff, 0xff]) },
    { name: 'a length past the end', body: Buffer.from([...tag(1, Wire.Len), 10, 0x61, 0x62]) },
    {
      name: 'a 2 GiB length',
      body: Buffer.from([...tag(1, Wire.Len), 0xff, 0xff, 0xff, 0xff, 0x07, 0x61]),
    },
    { name: 'wire type 6 (illegal)', body: Buffer.from(tag(1, 6)) },
    { name: 'wire type 7 (illegal)', body: Buffer.from(tag(1, 7)) },
    { name: 'an end-group with no start', body: Buffer.from(tag(1, Wire.EndGroup)) },
    {
      name: `unknown groups nested ${DEEP} deep`,
      body: Buffer.from(Array.from({ length: DEEP }, () => tag(9999, Wire.StartGroup)).flat()),
    },
  ];
  for (const field of message.fields) {
    inputs.push({ name: `wrong wire type for ${field.name}`, body: Buffer.from(wrongWireType(field)) });
  }
  inputs.push(...invalidUtf8(message));
  const rec = recursion(message);
  if (rec) {
    let inner: number[] = [];
    for (let i = 0; i < DEEP; i++) inner = wrapPath(rec.cycle, inner);
    const via = rec.cycle.map((s) => s.message.name).join('>');
    inputs.push({ name: `${via} nested ${DEEP} deep`, body: Buffer.from(wrapPath(rec.prefix, inner)) });
  }
  return inputs;
}
