/**
 * Response helpers of the admin gateway: security headers on every response, JSON bodies, and the
 * domain errors as the HTTP surface's one JSON error body (shared/http/errors.ts).
 */
import type { ServerResponse } from 'node:http';
import { sendJson as writeJson } from '../../../shared/http/json';
import { SECURITY_HEADERS } from '../../../shared/http/security-headers';
import { sendJsonError, type ErrorCodeName } from '../../../shared/http/errors';

/** The page's policy headers; their one home is shared/http (the monitor's status page uses them too). */
export { CONTENT_SECURITY_POLICY, SECURITY_HEADERS } from '../../../shared/http/security-headers';

/** The JSON error body of every admin error response (the HTTP surface's one shape). */
export type { ErrorBody } from '../../../shared/http/errors';

/** Writes a JSON response with the security headers and `Cache-Control: no-store`. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  extraHeaders: Record<string, string> = {},
): void {
  writeJson(res, status, body, { ...SECURITY_HEADERS, ...extraHeaders });
}

/** Writes `{error: {code, message}}` with the code's HTTP status and the security headers. */
export function sendError(
  res: ServerResponse,
  code: ErrorCodeName,
  message: string,
  extraHeaders: Record<string, string> = {},
): void {
  sendJsonError(res, code, message, { headers: { ...SECURITY_HEADERS, ...extraHeaders } });
}

/** The HTTP answer of a route's error; its one home is shared/http/errors.ts. */
export { describeDomainError, describeRouteError } from '../../../shared/http/errors';
