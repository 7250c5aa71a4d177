/**
 * OTLP/HTTP bodies: binary protobuf (`application/x-protobuf`) and OTLP JSON (`application/json`).
 *
 * OTLP JSON is protobuf's JSON mapping with one exception, which a plain protobuf JSON parser would
 * get wrong: trace and span ids are hex strings, not base64. So ids are turned into base64 before
 * protobuf-es parses the rest (field names in either case, enums as numbers or names, int64 as
 * strings or numbers, unknown fields from newer OTLP versions ignored).
 */
import {
  fromBinary,
  fromJson,
  toBinary,
  toJsonString,
  type DescMessage,
  type MessageShape,
} from '@bufbuild/protobuf';
import type { JsonValue } from '@bufbuild/protobuf';
import { InvalidArgumentError } from '../../../shared/errors';
import { cutText } from '../../../shared/text/cut';

/** The two OTLP/HTTP encodings. */
export type OtlpFormat = 'protobuf' | 'json';

/** A body that does not decode; the message is safe to send to the caller. */
export class OtlpDecodeError extends InvalidArgumentError {}

/** The OTLP format of a Content-Type header, or undefined for any other type. */
export function otlpFormatOf(contentType: string | undefined): OtlpFormat | undefined {
  const media = (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase();
  if (media === 'application/x-protobuf') return 'protobuf';
  if (media === 'application/json') return 'json';
  return undefined;
}

/** The Content-Type of a format's responses. */
export function contentTypeOf(format: OtlpFormat): string {
  return format === 'protobuf' ? 'application/x-protobuf' : 'application/json';
}

const ID_FIELDS = new Set(['traceId', 'spanId', 'parentSpanId', 'trace_id', 'span_id', 'parent_span_id']);
const HEX = /^(?:[0-9a-fA-F]{2})*$/;

/** Rewrites hex ids to base64 in place, wherever OTLP has them (spans, links, exemplars). */
function hexIdsToBase64(value: unknown): void {
  // An explicit stack, not recursion: a deeply nested body must not exhaust the call stack.
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (Array.isArray(node)) {
      for (const item of node) if (item !== null && typeof item === 'object') stack.push(item);
      continue;
    }
    if (node === null || typeof node !== 'object') continue;
    const obj = node as Record<string, unknown>;
    for (const [key, v] of Object.entries(obj)) {
      if (ID_FIELDS.has(key) && typeof v === 'string') {
        if (!HEX.test(v)) throw new OtlpDecodeError(`${key} must be a hex string (OTLP JSON)`);
        obj[key] = Buffer.from(v, 'hex').toString('base64');
      } else if (v !== null && typeof v === 'object') stack.push(v);
    }
  }
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Decodes an OTLP request body; throws OtlpDecodeError with a reason when it does not decode. */
export function decodeOtlp<Desc extends DescMessage>(
  schema: Desc,
  body: Uint8Array,
  format: OtlpFormat,
): MessageShape<Desc> {
  if (format === 'protobuf') {
    try {
      return fromBinary(schema, body);
    } catch {
      throw new OtlpDecodeError(`the body is not a valid ${schema.typeName} in protobuf`);
    }
  }
  let json: unknown;
  try {
    json = JSON.parse(UTF8.decode(body));
  } catch {
    throw new OtlpDecodeError('the body is not valid UTF-8 JSON');
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new OtlpDecodeError(`the body must be a JSON object (${schema.typeName})`);
  }
  hexIdsToBase64(json);
  try {
    return fromJson(schema, json as JsonValue, { ignoreUnknownFields: true });
  } catch (err) {
    // protobuf-es names the field and the problem; it never echoes more than a value's type.
    const detail = err instanceof Error ? cutText(err.message, 300) : '';
    throw new OtlpDecodeError(`the body is not a valid ${schema.typeName} in OTLP JSON: ${detail}`);
  }
}

/** Encodes a response in the request's format. */
export function encodeOtlp<Desc extends DescMessage>(
  schema: Desc,
  message: MessageShape<Desc>,
  format: OtlpFormat,
): Uint8Array {
  return format === 'protobuf' ? toBinary(schema, message) : Buffer.from(toJsonString(schema, message));
}
