/**
 * Response helpers of the admin gateway: security headers on every response, JSON bodies, and the
 * domain errors as the HTTP surface's one JSON error body (shared/http/errors.ts).
 */
import type { ServerResponse } from 'node:http';
import { isDomainError } from '../../../shared/errors';
import { sendJson as writeJson } from '../../../shared/http/json';
import {
  codeOfDomainError,
  httpStatusOf,
  sendJsonError,
  type ErrorCodeName,
} from '../../../shared/http/errors';

/** The page loads only its own script and stylesheet and talks only to its own origin. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

/** Headers sent on every admin response, whatever its status. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
});

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

/**
 * Status and caller-safe body of an error, or undefined when it is not a domain error (the caller
 * then answers a generic 500 and logs the cause).
 */
export function describeDomainError(
  err: unknown,
): { status: number; code: ErrorCodeName; message: string } | undefined {
  if (!isDomainError(err)) return undefined;
  const code = codeOfDomainError(err.code);
  return { status: httpStatusOf(code), code, message: err.message };
}
