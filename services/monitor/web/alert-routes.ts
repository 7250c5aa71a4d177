/**
 * The status page's alert and silence routes (issue 27): the alerts grouped by name with their state,
 * one alert's timeline, acknowledge and resolve, silences listed, created and expired. Reads need
 * what the page's data routes need (StatusPage's bearer check: `web.api_tokens` or a server token
 * with `monitor:read`); changes need a server token with `monitor:alerts` (the route table's
 * `api_tokens` check, as the RPCs that do the same: AcknowledgeAlert, CreateSilence...), so a
 * read-only page token cannot silence anything. Bodies are JSON, at most 16 KiB.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { InvalidArgumentError } from '../../../shared/errors';
import { BODY_TOO_LARGE, readBoundedBody } from '../../../shared/http/body';
import { sendJsonError, sendRouteError } from '../../../shared/http/errors';
import { sendJson } from '../../../shared/http/json';
import type { Route, RouteContext } from '../../../shared/http/routes';
import { SECURITY_HEADERS } from '../../../shared/http/security-headers';
import type { Logger } from '../../../shared/logging/logger';
import { cutText } from '../../../shared/text/cut';
import type { AlertLifecycle } from '../alerts/lifecycle';
import { parseMatcher } from '../alerts/matchers';
import type { AlertEntry, Silence, TimelineEntry } from '../alerts/store';

/** Largest body of a change. */
export const MAX_ALERT_ACTION_BODY_BYTES = 16 * 1024;
/** Alerts the page lists (newest first), and silences. */
export const PAGE_ALERTS = 200;
export const PAGE_SILENCES = 100;

/** What the routes need. */
export interface AlertRoutesDeps {
  lifecycle: AlertLifecycle;
  /** The page's read check (answers 401 itself and returns false). */
  authorizeRead(req: IncomingMessage, res: ServerResponse): boolean;
  /** The scope a change needs (route-table `api_tokens` check). */
  writeScope: string;
  logger: Logger;
}

const iso = (ms: number) => (ms ? new Date(ms).toISOString() : null);
const cut = (s: string, max: number) => cutText(s, max, { unit: 'code_point', ellipsis: '…' });

function alertView(e: AlertEntry) {
  return {
    id: e.alert.id,
    alert_name: cut(e.alert.alertName, 300),
    title: cut(e.alert.title, 300),
    message: cut(e.alert.message, 2000),
    severity: e.alert.severity,
    source_service: e.alert.sourceService,
    state: e.state,
    dedup_key: cut(e.dedupKey, 300),
    count: e.count,
    fired_at: iso(e.alert.firedAt),
    last_seen_at: iso(e.lastSeenAt),
    silenced_by: e.silencedBy,
    inhibited_by: e.inhibitedBy,
    acknowledged_by: e.acknowledgedBy,
    resolved_by: e.resolvedBy,
    resolved_at: iso(e.resolvedAt),
  };
}

function timelineView(t: TimelineEntry) {
  return { at: iso(t.at), kind: t.kind, actor: cut(t.actor, 300), detail: cut(t.detail, 1000) };
}

function silenceView(s: Silence, state: string) {
  return {
    id: s.id,
    matchers: s.matchers.map((m) => `${m.name}${m.op}${JSON.stringify(m.value)}`),
    starts_at: iso(s.startsAt),
    ends_at: iso(s.endsAt),
    created_by: s.createdBy,
    comment: s.comment,
    recurrence: s.recurrence ?? null,
    state,
  };
}

/** Groups alerts by name, open groups first, each newest first. */
export function groupAlerts(entries: readonly AlertEntry[]) {
  const groups = new Map<string, AlertEntry[]>();
  for (const e of entries) {
    const list = groups.get(e.alert.alertName) ?? [];
    list.push(e);
    groups.set(e.alert.alertName, list);
  }
  return [...groups.entries()]
    .map(([name, list]) => ({
      name: cut(name, 300),
      open: list.filter((e) => e.state !== 'resolved').length,
      alerts: list.map(alertView),
    }))
    .sort((a, b) => Number(b.open > 0) - Number(a.open > 0));
}

async function readJson(
  req: IncomingMessage,
  res: ServerResponse,
): Promise<Record<string, unknown> | undefined> {
  const body = await readBoundedBody(req, MAX_ALERT_ACTION_BODY_BYTES);
  if (body === BODY_TOO_LARGE) {
    sendJsonError(res, 'resource_exhausted', `the body is larger than ${MAX_ALERT_ACTION_BODY_BYTES} bytes`, {
      status: 413,
      headers: { ...SECURITY_HEADERS, Connection: 'close' },
    });
    return undefined;
  }
  let parsed: unknown;
  try {
    parsed = body.length === 0 ? {} : JSON.parse(body.toString('utf8'));
  } catch {
    throw new InvalidArgumentError('the body is not JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new InvalidArgumentError('the body must be a JSON object');
  return parsed as Record<string, unknown>;
}

function str(body: Record<string, unknown>, key: string): string {
  const v = body[key];
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new InvalidArgumentError(`${key} must be a string`, key);
  return v;
}

/** The routes (added to the service's table by StatusPage). */
export function alertRoutes(deps: AlertRoutesDeps): Route[] {
  const { lifecycle } = deps;
  const handle =
    (read: boolean, serve: (req: IncomingMessage, res: ServerResponse, ctx: RouteContext) => Promise<void>) =>
    async (req: IncomingMessage, res: ServerResponse, ctx: RouteContext) => {
      if (read) {
        req.resume();
        if (!deps.authorizeRead(req, res)) return;
      }
      try {
        await serve(req, res, ctx);
      } catch (err) {
        sendRouteError(res, err, deps.logger, { path: ctx.path }, { ...SECURITY_HEADERS });
      }
    };
  const write = { auth: 'api_tokens' as const, scope: deps.writeScope };
  const ok = (res: ServerResponse, body: unknown) => sendJson(res, 200, body, { ...SECURITY_HEADERS });
  return [
    {
      methods: ['GET'],
      path: '/status/alerts.json',
      handler: handle(true, async (_req, res) => {
        const [alerts, silences] = await Promise.all([
          lifecycle.list({}, undefined, PAGE_ALERTS),
          lifecycle.listSilences(undefined, PAGE_SILENCES),
        ]);
        ok(res, {
          groups: groupAlerts(alerts),
          silences: silences.map((s) => silenceView(s, lifecycle.silenceState(s))),
        });
      }),
    },
    {
      methods: ['GET'],
      path: '/status/alerts/:id',
      handler: handle(true, async (_req, res, ctx) => {
        const { entry, timeline } = await lifecycle.get(ctx.params.id!);
        ok(res, { alert: alertView(entry), timeline: timeline.map(timelineView) });
      }),
    },
    {
      methods: ['POST'],
      path: '/status/alerts/:id/acknowledge',
      ...write,
      handler: handle(false, async (req, res, ctx) => {
        const body = await readJson(req, res);
        if (!body) return;
        ok(res, {
          alert: alertView(await lifecycle.acknowledge(ctx.params.id!, str(body, 'by'), str(body, 'note'))),
        });
      }),
    },
    {
      methods: ['POST'],
      path: '/status/alerts/:id/resolve',
      ...write,
      handler: handle(false, async (req, res, ctx) => {
        const body = await readJson(req, res);
        if (!body) return;
        ok(res, { alert: alertView(await lifecycle.resolve(ctx.params.id!, str(body, 'by'))) });
      }),
    },
    {
      methods: ['POST'],
      path: '/status/silences',
      ...write,
      handler: handle(false, async (req, res) => {
        const body = await readJson(req, res);
        if (!body) return;
        const raw = body.matchers;
        if (!Array.isArray(raw) || raw.some((m) => typeof m !== 'string'))
          throw new InvalidArgumentError('matchers must be a list of name=value texts', 'matchers');
        const endsAt = Date.parse(str(body, 'ends_at'));
        if (Number.isNaN(endsAt))
          throw new InvalidArgumentError('ends_at must be an ISO 8601 time', 'ends_at');
        const s = await lifecycle.createSilence({
          matchers: (raw as string[]).slice(0, 17).map((m) => parseMatcher(m, 'matchers')),
          startsAt: 0,
          endsAt,
          createdBy: str(body, 'created_by'),
          comment: str(body, 'comment'),
        });
        ok(res, { silence: silenceView(s, lifecycle.silenceState(s)) });
      }),
    },
    {
      methods: ['POST'],
      path: '/status/silences/:id/expire',
      ...write,
      handler: handle(false, async (req, res, ctx) => {
        req.resume();
        const s = await lifecycle.expireSilence(ctx.params.id!);
        ok(res, { silence: silenceView(s, lifecycle.silenceState(s)) });
      }),
    },
  ];
}
