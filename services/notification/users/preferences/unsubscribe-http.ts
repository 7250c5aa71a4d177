/**
 * The one-click unsubscribe routes on the HTTP port (RFC 8058). No API token or JWT: the signed
 * token in the link is the authentication (like the signed provider webhooks, the routes are not
 * marked `auth: 'api_tokens'`).
 *
 * - `POST /unsubscribe?token=...` with the form body `List-Unsubscribe=One-Click` (what a mail client
 *   sends for the `List-Unsubscribe-Post` header, urlencoded or multipart) turns the category's email
 *   off for the user and answers a short page. Replaying it changes nothing more.
 * - `GET /unsubscribe?token=...` (a person following the link, or a link scanner) changes nothing:
 *   it shows a page whose button POSTs the same.
 * - A token that is expired, forged or damaged: 400 with one page for all, saying nothing of why.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isDomainError } from '../../../../shared/errors';
import { BODY_TOO_LARGE, readBoundedBody } from '../../../../shared/http/body';
import type { Route } from '../../../../shared/http/routes';
import type { Logger } from '../../../../shared/logging/logger';
import type { PreferenceBook } from './types';
import { ONE_CLICK, UNSUBSCRIBE_PATH, type UnsubscribeLinks, type UnsubscribeTarget } from './unsubscribe';

/** Largest POST body read (the one-click body is 26 bytes; a multipart one a few hundred). */
export const MAX_UNSUBSCRIBE_BODY_BYTES = 2048;

/**
 * Headers of every unsubscribe page: no caching (a token is in the URL), no referrer (the token
 * never leaves in a Referer), no framing, and a policy that allows only the page's own form.
 */
export const UNSUBSCRIBE_PAGE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'Content-Type': 'text/html; charset=utf-8',
  'Cache-Control': 'no-store',
  'Content-Security-Policy':
    "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
});

/** What the routes need. */
export interface UnsubscribeRoutesDeps {
  links: UnsubscribeLinks;
  book: PreferenceBook;
  logger: Logger;
}

const INVALID_LINK =
  'This unsubscribe link is not valid or has expired. Use the link in a more recent email, or change your preferences in your account.';

/** The GET and POST routes of `/unsubscribe`, for the service's route table. */
export function unsubscribeRoutes(deps: UnsubscribeRoutesDeps): Route[] {
  const logger = deps.logger.child({ component: 'unsubscribe' });

  const target = (query: URLSearchParams): UnsubscribeTarget | undefined => {
    const tokens = query.getAll('token');
    return tokens.length === 1 ? deps.links.verify(tokens[0]!) : undefined;
  };

  const confirmPage = (req: IncomingMessage, res: ServerResponse, query: URLSearchParams): void => {
    req.resume();
    const found = target(query);
    if (!found) return page(res, 400, 'Link not valid', INVALID_LINK);
    // The form posts back to this very URL (a relative `?token=` keeps any path prefix of a proxy).
    const action = `?token=${encodeURIComponent(query.get('token')!)}`;
    const [name, value] = ONE_CLICK.split('=') as [string, string];
    page(
      res,
      200,
      'Unsubscribe',
      `Stop receiving “${found.category}” emails? Nothing changes until you press the button.`,
      `<form method="post" action="${escapeHtml(action)}"><input type="hidden" name="${name}" value="${value}"><button type="submit">Unsubscribe</button></form>`,
    );
  };

  const unsubscribe = async (
    req: IncomingMessage,
    res: ServerResponse,
    query: URLSearchParams,
  ): Promise<void> => {
    const body = await readBoundedBody(req, MAX_UNSUBSCRIBE_BODY_BYTES);
    if (body === BODY_TOO_LARGE) {
      return page(res, 413, 'Request too large', 'The request is too large.', '', { Connection: 'close' });
    }
    const found = target(query);
    if (!found) return page(res, 400, 'Link not valid', INVALID_LINK);
    if (!isOneClick(req.headers['content-type'], body)) {
      return page(res, 400, 'Bad request', `The request must carry the form field ${ONE_CLICK}.`);
    }
    try {
      await deps.book.update(found.userId, [{ category: found.category, channel: 'email', enabled: false }]);
    } catch (err) {
      if (!isDomainError(err)) throw err;
      // The category became required or was removed, or the user is gone: the link has no use now.
      logger.info(
        { category: found.category, code: err.code },
        'unsubscribe link refused by the preferences',
      );
      return page(res, 400, 'Link not valid', 'This unsubscribe link can no longer be used.');
    }
    logger.info({ userId: found.userId, category: found.category }, 'unsubscribed by one-click link');
    page(res, 200, 'Unsubscribed', `You will no longer receive “${found.category}” emails.`);
  };

  return [
    {
      methods: ['GET', 'HEAD'],
      path: UNSUBSCRIBE_PATH,
      handler: (req, res, { query }) => confirmPage(req, res, query),
    },
    {
      methods: ['POST'],
      path: UNSUBSCRIBE_PATH,
      handler: async (req, res, { query }) => {
        try {
          await unsubscribe(req, res, query);
        } catch (err) {
          logger.error({ err }, 'one-click unsubscribe failed');
          if (!res.headersSent)
            page(res, 500, 'Try again later', 'Something went wrong. Please try again later.');
        }
      },
    },
  ];
}

/** True when the body carries `List-Unsubscribe=One-Click` (urlencoded, or a multipart form field). */
function isOneClick(contentType: string | undefined, body: Buffer): boolean {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  const text = body.toString('utf8');
  if (type === 'multipart/form-data') {
    return /content-disposition:\s*form-data;\s*name="?List-Unsubscribe"?\s*\r?\n(?:[^\r\n]+\r?\n)*\r?\nOne-Click\r?\n/i.test(
      text,
    );
  }
  // application/x-www-form-urlencoded, and a body sent without a type.
  if (type !== '' && type !== 'application/x-www-form-urlencoded') return false;
  return new URLSearchParams(text).getAll('List-Unsubscribe').includes('One-Click');
}

function page(
  res: ServerResponse,
  status: number,
  title: string,
  message: string,
  extra = '',
  headers: Record<string, string> = {},
): void {
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title></head>
<body><main><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>${extra}</main></body></html>
`;
  res.writeHead(status, {
    ...UNSUBSCRIBE_PAGE_HEADERS,
    ...headers,
    'Content-Length': Buffer.byteLength(html),
  });
  res.end(res.req.method === 'HEAD' ? undefined : html);
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
