/**
 * `/oncall/ack` (issue 28): the acknowledgment link of a page. GET with a valid token shows a small
 * confirmation page with a POST form (link scanners and mail previews prefetch GETs: a GET never
 * acknowledges); POST acknowledges as the paged user (timeline: who = the user, how = `link`); a
 * second POST answers "already acknowledged". A bad signature, an expired token or a malformed one:
 * 403 with a clear page, nothing changed. No API token: the signature is the credential. The page
 * headers are the unsubscribe page's (no caching, no referrer, only its own form).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { BODY_TOO_LARGE, readBoundedBody } from '../../../shared/http/body';
import type { Route } from '../../../shared/http/routes';
import type { Logger } from '../../../shared/logging/logger';
import { cutText } from '../../../shared/text/cut';
import type { AlertStore } from '../alerts/store';
import { ACK_PATH, MAX_ACK_TOKEN_LENGTH } from '../oncall/ack-links';
import type { EscalationAcknowledger, LinkAckOutcome } from '../oncall/escalation';

/** Largest POST body read (a form with the token). */
export const MAX_ACK_BODY_BYTES = MAX_ACK_TOKEN_LENGTH + 64;

/** Headers of every acknowledgment page: no caching (a token is in the URL), no referrer, only its own form. */
export const ACK_PAGE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'Content-Type': 'text/html; charset=utf-8',
  'Cache-Control': 'no-store',
  'Content-Security-Policy':
    "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
});

/** What the route needs. */
export interface OnCallAckRoutesDeps {
  acknowledger: Pick<EscalationAcknowledger, 'checkLink' | 'acknowledgeByLink'>;
  alerts: Pick<AlertStore, 'get'>;
  logger: Logger;
}

const REFUSED: Record<string, string> = {
  malformed: 'This acknowledgment link is not valid. Open the link from the page you received, whole.',
  forged: 'This acknowledgment link is not valid. Open the link from the page you received, whole.',
  expired: 'This acknowledgment link has expired. Acknowledge the alert from the status page instead.',
  unknown_alert: 'The alert of this link no longer exists.',
};

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(res: ServerResponse, status: number, title: string, message: string, extra = ''): void {
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title></head>
<body><main><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>${extra}</main></body></html>`;
  res.writeHead(status, { ...ACK_PAGE_HEADERS, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

/** The route (added to the monitor's route table by the composition root). */
export function onCallAckRoutes(deps: OnCallAckRoutesDeps): Route[] {
  const refused = (res: ServerResponse, outcome: LinkAckOutcome & { outcome: 'refused' }) =>
    page(res, 403, 'Link not valid', REFUSED[outcome.reason] ?? REFUSED.forged!);

  const alertName = async (alertId: string) => {
    const entry = await deps.alerts.get(alertId);
    return cutText(entry?.alert.title ?? alertId, 200, { unit: 'code_point', ellipsis: '…' });
  };

  const show = async (_req: IncomingMessage, res: ServerResponse, token: string | null) => {
    const check = await deps.acknowledger.checkLink(token);
    if (check.outcome === 'refused') return refused(res, check);
    const name = await alertName(check.alertId);
    if (check.outcome === 'already_acknowledged')
      return page(res, 200, 'Already acknowledged', `“${name}” is already acknowledged (or resolved).`);
    // The form posts back to this very URL (a relative `?t=` keeps any path prefix of a proxy).
    const action = `?t=${encodeURIComponent(token ?? '')}`;
    page(
      res,
      200,
      'Acknowledge alert',
      `Acknowledge “${name}” as ${check.userId}? Nothing changes until you press the button; escalation stops once you do.`,
      `<form method="post" action="${escapeHtml(action)}"><button type="submit">Acknowledge</button></form>`,
    );
  };

  const acknowledge = async (req: IncomingMessage, res: ServerResponse, query: URLSearchParams) => {
    const body = await readBoundedBody(req, MAX_ACK_BODY_BYTES);
    if (body === BODY_TOO_LARGE) return page(res, 413, 'Request too large', 'The request is too large.');
    const form = new URLSearchParams(body.toString('utf8'));
    const token = form.get('t') ?? query.get('t');
    const outcome = await deps.acknowledger.acknowledgeByLink(token);
    if (outcome.outcome === 'refused') return refused(res, outcome);
    const name = await alertName(outcome.alertId);
    if (outcome.outcome === 'already_acknowledged')
      return page(res, 200, 'Already acknowledged', `“${name}” was already acknowledged (or resolved).`);
    page(res, 200, 'Acknowledged', `“${name}” is acknowledged by ${outcome.userId}. Escalation stops.`);
  };

  const guard =
    (fn: (req: IncomingMessage, res: ServerResponse, query: URLSearchParams) => Promise<void>) =>
    async (req: IncomingMessage, res: ServerResponse, ctx: { query: URLSearchParams }) => {
      try {
        await fn(req, res, ctx.query);
      } catch (err) {
        deps.logger.error({ err }, 'on-call acknowledgment failed');
        if (!res.headersSent) page(res, 500, 'Something went wrong', 'Try again in a moment.');
      }
    };

  return [
    {
      methods: ['GET', 'POST'],
      path: ACK_PATH,
      handler: guard(async (req, res, query) => {
        if (req.method === 'POST') return acknowledge(req, res, query);
        req.resume();
        return show(req, res, query.get('t'));
      }),
    },
  ];
}
