/**
 * The AlertService RPCs (svc/monitor/v1/alerts.proto): wire messages to calls on the alert
 * lifecycle (../alerts/lifecycle.ts) and back. No rules here: bounds and states are the lifecycle's.
 * Pages are keyset tokens (shared/storage/keyset-token.ts) bound to the request's filters, sizes the
 * one page-size rule (shared/storage/page-size.ts).
 */
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromMs, timestampMs } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import {
  type AcknowledgeAlertRequest,
  AcknowledgeAlertResponseSchema,
  AlertDetailSchema,
  type AlertService,
  type CreateSilenceRequest,
  CreateSilenceResponseSchema,
  type ExpireSilenceRequest,
  ExpireSilenceResponseSchema,
  type GetAlertRequest,
  GetAlertResponseSchema,
  type LabelMatcher as WireMatcher,
  type ListAlertsRequest,
  ListAlertsResponseSchema,
  type ListSilencesRequest,
  ListSilencesResponseSchema,
  MatchOperator,
  type ResolveAlertRequest,
  ResolveAlertResponseSchema,
  SilenceState,
  type SilenceSchema,
  TimelineEventKind,
  TimelineEntrySchema,
} from '../../../shared/gen/svc/monitor/v1/alerts_pb';
import { AlertState as WireAlertState } from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { InvalidArgumentError } from '../../../shared/errors';
import { decodeKeysetToken, encodeKeysetToken } from '../../../shared/storage/keyset-token';
import { pageSize } from '../../../shared/storage/page-size';
import type { AlertLifecycle } from '../alerts/lifecycle';
import type { LabelMatcher, MatchOp } from '../alerts/matchers';
import type { AlertCursor, AlertEntry, AlertState, Silence, TimelineKind } from '../alerts/store';
import { alertToWire, WIRE_ALERT_STATE } from './alert-wire';

/** Page sizes of ListAlerts and ListSilences. */
export const ALERT_PAGE_SIZES = { default: 50, max: 500 } as const;

/** Most severities one ListAlerts filter lists. */
const MAX_SEVERITIES = 16;
/** Most states one ListAlerts filter lists (three exist; repeats are allowed up to this). */
const MAX_STATES = 8;

const OPS: Partial<Record<MatchOperator, MatchOp>> = {
  [MatchOperator.EQUAL]: '=',
  [MatchOperator.NOT_EQUAL]: '!=',
  [MatchOperator.REGEX]: '=~',
  [MatchOperator.NOT_REGEX]: '!~',
};
const WIRE_OPS: Record<MatchOp, MatchOperator> = {
  '=': MatchOperator.EQUAL,
  '!=': MatchOperator.NOT_EQUAL,
  '=~': MatchOperator.REGEX,
  '!~': MatchOperator.NOT_REGEX,
};
const STATES: Partial<Record<WireAlertState, AlertState>> = {
  [WireAlertState.TRIGGERED]: 'triggered',
  [WireAlertState.ACKNOWLEDGED]: 'acknowledged',
  [WireAlertState.RESOLVED]: 'resolved',
};
const KINDS: Record<TimelineKind, TimelineEventKind> = {
  triggered: TimelineEventKind.TRIGGERED,
  updated: TimelineEventKind.UPDATED,
  notified: TimelineEventKind.NOTIFIED,
  acknowledged: TimelineEventKind.ACKNOWLEDGED,
  resolved: TimelineEventKind.RESOLVED,
  silenced: TimelineEventKind.SILENCED,
  inhibited: TimelineEventKind.INHIBITED,
  unmuted: TimelineEventKind.UNMUTED,
};
const SILENCE_STATES = {
  pending: SilenceState.PENDING,
  active: SilenceState.ACTIVE,
  expired: SilenceState.EXPIRED,
} as const;

function matchersFromWire(list: readonly WireMatcher[]): LabelMatcher[] {
  return list.map((m) => {
    const op = OPS[m.operator];
    if (!op) throw new InvalidArgumentError('matchers: operator is required', 'matchers');
    return { name: m.name, op, value: m.value };
  });
}

function cursorToken(binding: string, c: AlertCursor): string {
  return encodeKeysetToken(binding, { createdAt: new Date(c.firedAt).toISOString(), id: c.id });
}

function cursorOf(binding: string, token: string): AlertCursor | undefined {
  if (token === '') return undefined;
  const key = decodeKeysetToken(binding, token);
  return { firedAt: Date.parse(key.createdAt), id: key.id };
}

function detail(e: AlertEntry): MessageInitShape<typeof AlertDetailSchema> {
  return {
    alert: alertToWire({ ...e.alert, state: e.state }),
    state: WIRE_ALERT_STATE[e.state],
    dedupKey: e.dedupKey,
    labels: e.labels,
    count: e.count,
    lastSeenAt: timestampFromMs(e.lastSeenAt),
    silencedBy: e.silencedBy,
    inhibitedBy: e.inhibitedBy,
    acknowledgedBy: e.acknowledgedBy,
    resolvedBy: e.resolvedBy,
    ...(e.resolvedAt ? { resolvedAt: timestampFromMs(e.resolvedAt) } : {}),
  };
}

/** AlertService over the lifecycle of the monitor's AlertHub. */
export class AlertServiceRpc implements ServiceImpl<typeof AlertService> {
  constructor(private readonly lifecycle: () => AlertLifecycle) {}

  private silenceToWire(s: Silence): MessageInitShape<typeof SilenceSchema> {
    return {
      id: s.id,
      matchers: s.matchers.map((m) => ({ name: m.name, operator: WIRE_OPS[m.op], value: m.value })),
      startsAt: timestampFromMs(s.startsAt),
      endsAt: timestampFromMs(s.endsAt),
      createdBy: s.createdBy,
      comment: s.comment,
      ...(s.recurrence ? { recurrence: s.recurrence } : {}),
      state: SILENCE_STATES[this.lifecycle().silenceState(s)],
      createdAt: timestampFromMs(s.createdAt),
    };
  }

  async acknowledgeAlert(req: AcknowledgeAlertRequest) {
    const e = await this.lifecycle().acknowledge(req.alertId, req.acknowledgedBy, req.note);
    return create(AcknowledgeAlertResponseSchema, { alert: detail(e) });
  }

  async resolveAlert(req: ResolveAlertRequest) {
    const e = await this.lifecycle().resolve(req.alertId, req.resolvedBy);
    return create(ResolveAlertResponseSchema, { alert: detail(e) });
  }

  async getAlert(req: GetAlertRequest) {
    const { entry, timeline } = await this.lifecycle().get(req.alertId);
    const alert = create(AlertDetailSchema, detail(entry));
    alert.timeline = timeline.map((t) =>
      create(TimelineEntrySchema, {
        at: timestampFromMs(t.at),
        kind: KINDS[t.kind],
        actor: t.actor,
        detail: t.detail,
      }),
    );
    return create(GetAlertResponseSchema, { alert });
  }

  async listAlerts(req: ListAlertsRequest) {
    const size = pageSize(req.pageSize, ALERT_PAGE_SIZES);
    if (req.severities.length > MAX_SEVERITIES)
      throw new InvalidArgumentError(`severities lists more than ${MAX_SEVERITIES} values`, 'severities');
    if (req.states.length > MAX_STATES)
      throw new InvalidArgumentError(`states lists more than ${MAX_STATES} values`, 'states');
    const states = req.states.map((s) => {
      const state = STATES[s];
      if (!state) throw new InvalidArgumentError('states: unknown state', 'states');
      return state;
    });
    const matchers = matchersFromWire(req.matchers);
    const binding = JSON.stringify([
      'alerts',
      [...states].sort(),
      [...req.severities].map((s) => s.toLowerCase()).sort(),
      matchers,
    ]);
    const after = cursorOf(binding, req.pageToken);
    const rows = await this.lifecycle().list(
      { states, severities: req.severities, matchers },
      after,
      size + 1,
    );
    const page = rows.slice(0, size);
    const last = page[page.length - 1];
    return create(ListAlertsResponseSchema, {
      alerts: page.map(detail),
      nextPageToken:
        rows.length > size && last
          ? cursorToken(binding, { firedAt: last.alert.firedAt, id: last.alert.id })
          : '',
    });
  }

  async createSilence(req: CreateSilenceRequest) {
    if (!req.endsAt) throw new InvalidArgumentError('ends_at is required', 'ends_at');
    const s = await this.lifecycle().createSilence({
      matchers: matchersFromWire(req.matchers),
      startsAt: req.startsAt ? timestampMs(req.startsAt) : 0,
      endsAt: timestampMs(req.endsAt),
      createdBy: req.createdBy,
      comment: req.comment,
      ...(req.recurrence
        ? {
            recurrence: {
              days: [...req.recurrence.days],
              start: req.recurrence.start,
              end: req.recurrence.end,
              timeZone: req.recurrence.timeZone,
            },
          }
        : {}),
    });
    return create(CreateSilenceResponseSchema, { silence: this.silenceToWire(s) });
  }

  async listSilences(req: ListSilencesRequest) {
    const size = pageSize(req.pageSize, ALERT_PAGE_SIZES);
    const binding = 'silences';
    const after = cursorOf(binding, req.pageToken);
    const rows = await this.lifecycle().listSilences(after, size + 1);
    const page = rows.slice(0, size);
    const last = page[page.length - 1];
    return create(ListSilencesResponseSchema, {
      silences: page.map((s) => this.silenceToWire(s)),
      nextPageToken:
        rows.length > size && last ? cursorToken(binding, { firedAt: last.createdAt, id: last.id }) : '',
    });
  }

  async expireSilence(req: ExpireSilenceRequest) {
    const s = await this.lifecycle().expireSilence(req.silenceId);
    return create(ExpireSilenceResponseSchema, { silence: this.silenceToWire(s) });
  }
}
