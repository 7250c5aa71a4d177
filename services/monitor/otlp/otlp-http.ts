/**
 * OTLP/HTTP on the monitor's HTTP port: `POST /v1/traces` and `POST /v1/metrics`, the paths every
 * OpenTelemetry SDK's OTLP/HTTP exporter uses by default.
 *
 * - Bodies: `application/x-protobuf` or `application/json` (OTLP JSON); any other type is 415.
 * - `Content-Encoding: gzip` (or none); another encoding is 415.
 * - At most `maxBodyBytes`, counted on the wire and again after gunzip (a small gzip bomb cannot
 *   inflate past it): beyond it 413, and the connection is closed rather than drained. The gunzipped
 *   body holds what it expands to in the port's in-flight budget (`inflateRouteBody`), not its wire
 *   bytes: past what the budget has free, 429 (retry later).
 * - A body that does not decode, or spans that fail validation: 400 with the reason.
 * - Answers in the request's format: the empty export response on success; on failure, for a
 *   protobuf request a protobuf `google.rpc.Status` (as OTLP/HTTP specifies), otherwise the HTTP
 *   port's one JSON error body.
 * - Auth: the routes are marked `auth: 'api_tokens'` with the `monitor:ingest` scope, so the route
 *   table asks for the same bearer tokens and scope as the OTLP RPCs before the handler runs.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { create, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import {
  ExportMetricsServiceRequestSchema,
  ExportMetricsServiceResponseSchema,
} from '../../../shared/gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb';
import {
  ExportTraceServiceRequestSchema,
  ExportTraceServiceResponseSchema,
} from '../../../shared/gen/opentelemetry/proto/collector/trace/v1/trace_service_pb';
import {
  describeDomainError,
  grpcCodeOf,
  httpStatusOf,
  sendJsonError,
  type ErrorCodeName,
} from '../../../shared/http/errors';
import type { Route } from '../../../shared/http/routes';
import { type OtlpFormat, contentTypeOf, decodeOtlp, encodeOtlp, otlpFormatOf } from './otlp-codec';
import type { OtlpReceiver } from './otlp-receiver';
import { OTLP_HTTP_SCOPE } from '../rpc/scopes';
import { BODY_TOO_LARGE, readBoundedBody } from '../../../shared/http/body';
import { cutText } from '../../../shared/text/cut';
import { inflateRouteBody } from '../../../shared/rpc/http-port';
import { SERVER_BUSY } from '../../../shared/rpc/request-budget';

/** Options of the OTLP/HTTP routes. */
export interface OtlpHttpOptions {
  receiver: OtlpReceiver;
  /** Largest body accepted, compressed or not (the server's `max_request_bytes`). */
  maxBodyBytes: number;
}

/** A refusal: its code, message and HTTP status (413 and 415 have no Connect code of their own). */
class Refusal {
  constructor(
    readonly code: ErrorCodeName,
    readonly message: string,
    readonly status: number = httpStatusOf(code),
  ) {}
}

/** google.rpc.Status `{code = 1, message = 2}`, written by hand: two fields, no generated type. */
function statusMessage(code: number, message: string): Uint8Array {
  return new BinaryWriter()
    .tag(1, WireType.Varint)
    .int32(code)
    .tag(2, WireType.LengthDelimited)
    .string(message)
    .finish();
}

function sendRefusal(
  res: ServerResponse,
  format: OtlpFormat | undefined,
  refusal: Refusal,
  close = false,
): void {
  const headers: Record<string, string> = close ? { Connection: 'close' } : {};
  if (close) res.shouldKeepAlive = false;
  if (format !== 'protobuf') {
    sendJsonError(res, refusal.code, refusal.message, { status: refusal.status, headers });
    return;
  }
  const body = statusMessage(grpcCodeOf(refusal.code), refusal.message);
  res.writeHead(refusal.status, {
    ...headers,
    'Content-Type': 'application/x-protobuf',
    'Content-Length': String(body.byteLength),
  });
  res.end(body);
}

const TOO_LARGE = (max: number) =>
  new Refusal('resource_exhausted', `the body is larger than ${max} bytes`, 413);

/** Reads the body up to `max` bytes (the one bounded reader, shared/http/body.ts); a Refusal (413) beyond it. */
async function readBody(req: IncomingMessage, max: number): Promise<Buffer | Refusal> {
  const body = await readBoundedBody(req, max);
  return body === BODY_TOO_LARGE ? TOO_LARGE(max) : body;
}

async function inflate(body: Buffer, encoding: string, max: number): Promise<Uint8Array | Refusal> {
  if (encoding === '' || encoding === 'identity') return body;
  if (encoding !== 'gzip') {
    return new Refusal(
      'unimplemented',
      `unsupported Content-Encoding "${cutText(encoding, 32)}"; use gzip`,
      415,
    );
  }
  try {
    // Within the request's share of the port's in-flight budget: the body holds what it expands to.
    return await inflateRouteBody(max, 'gzip', body);
  } catch (err) {
    if (err === SERVER_BUSY) return new Refusal('resource_exhausted', SERVER_BUSY.rawMessage, 429);
    if (err instanceof ConnectError && err.code === Code.ResourceExhausted) return TOO_LARGE(max);
    return new Refusal('invalid_argument', 'the body is not valid gzip');
  }
}

function exportRoute<Req extends DescMessage, Res extends DescMessage>(
  path: string,
  requestSchema: Req,
  responseSchema: Res,
  apply: (request: MessageShape<Req>) => void,
  options: OtlpHttpOptions,
): Route {
  return {
    methods: ['POST'],
    path,
    auth: 'api_tokens',
    scope: OTLP_HTTP_SCOPE,
    async handler(req, res) {
      const format = otlpFormatOf(req.headers['content-type']);
      if (!format) {
        req.resume();
        sendRefusal(
          res,
          undefined,
          new Refusal(
            'unimplemented',
            'Content-Type must be application/x-protobuf or application/json',
            415,
          ),
        );
        return;
      }
      const raw = await readBody(req, options.maxBodyBytes);
      if (raw instanceof Refusal) {
        sendRefusal(res, format, raw, true);
        return;
      }
      const encoding = (req.headers['content-encoding'] ?? '').trim().toLowerCase();
      const body = await inflate(raw, encoding, options.maxBodyBytes);
      if (body instanceof Refusal) {
        sendRefusal(res, format, body);
        return;
      }
      try {
        apply(decodeOtlp(requestSchema, body, format));
      } catch (err) {
        const known = describeDomainError(err);
        if (known) {
          sendRefusal(res, format, new Refusal(known.code, known.message));
          return;
        }
        throw err;
      }
      const answer = encodeOtlp(responseSchema, create(responseSchema), format);
      res.writeHead(200, {
        'Content-Type': contentTypeOf(format),
        'Content-Length': String(answer.byteLength),
      });
      res.end(answer);
    },
  };
}

/** `POST /v1/traces` and `POST /v1/metrics`, for the monitor's route table. */
export function otlpHttpRoutes(options: OtlpHttpOptions): Route[] {
  const { receiver } = options;
  return [
    exportRoute(
      '/v1/traces',
      ExportTraceServiceRequestSchema,
      ExportTraceServiceResponseSchema,
      (request) => receiver.exportTraces(request),
      options,
    ),
    exportRoute(
      '/v1/metrics',
      ExportMetricsServiceRequestSchema,
      ExportMetricsServiceResponseSchema,
      (request) => receiver.exportMetrics(request),
      options,
    ),
  ];
}
