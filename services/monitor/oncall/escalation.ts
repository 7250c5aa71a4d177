/**
 * Escalation (issue 28, README "Escalation"): the engine that pages an alert's responders step by
 * step until somebody acknowledges, and the acknowledger that takes the acknowledgment back from a
 * signed link or an SMS code.
 *
 * Once across replicas: every page is claimed in the alerts area's notification log (group key
 * `oncall:<alert id>`, receiver the user id, step `r<round>:s<step>`) before it is sent, with a lease
 * another replica takes over when the claimer dies mid-send; the page itself carries Notify's
 * idempotency key for the same tuple, so a page retried after a crash is not sent twice by the
 * notification service. A step moves on by compare-and-set in the {@link EscalationStore}, so only
 * one replica advances it. Before each step the engine reads the alert's state from the shared
 * alert store: acknowledged or resolved stops the escalation on every replica.
 */
import { createHash, randomInt } from 'node:crypto';
import { type Logger, silentLogger } from '../../../shared/logging/logger';
import { type Clock, systemClock } from '../../../shared/runtime/clock';
import { newId } from '../../../shared/runtime/ids';
import { cutText } from '../../../shared/text/cut';
import { FailedPreconditionError } from '../../../shared/errors';
import type { AlertLifecycle } from '../alerts/lifecycle';
import { type CompiledMatcher, compileMatchers, matchesAll, parseMatcher } from '../alerts/matchers';
import type { AlertEntry, AlertStore, NotificationKey } from '../alerts/store';
import type { AckLinks } from './ack-links';
import type { EscalationPolicyConfig } from './escalation-config';
import type { EscalationState, EscalationStore, StepPosition } from './escalation-store';
import { PagerError, type Pager } from './pager';
import type { AckOutcome, OnCallLookup, PageAcknowledger } from './ports';

/** Open alerts read per tick when looking for alerts to escalate. */
export const ESCALATION_OPEN_SCAN = 10_000;
/** Digits of an acknowledgment code. */
export const ACK_CODE_DIGITS = 6;
const MINUTE_MS = 60_000;

/** Options of {@link EscalationEngine}. */
export interface EscalationEngineOptions {
  alerts: AlertStore;
  store: EscalationStore;
  policies: readonly EscalationPolicyConfig[];
  pager: Pager;
  links: AckLinks;
  /** Resolves `{schedule: name}` targets (absent: such targets page nobody). */
  onCall?: OnCallLookup;
  /** The notification service's required category of pages. */
  category: string;
  linkTtlMs: number;
  codeTtlMs: number;
  /** How long a claimed page is held before another replica may retry it. */
  claimLeaseMs: number;
  /** Active escalations driven per tick. */
  maxActive: number;
  /** This replica's name in the notification log. */
  owner?: string;
  clock?: Clock;
  logger?: Logger;
  /** Draws a code (tests); default: 6 random digits. */
  drawCode?: () => string;
}

interface CompiledPolicy {
  config: EscalationPolicyConfig;
  matchers: CompiledMatcher[];
}

/** The key of a page in Notify and in the code table. */
export function pageKey(alertId: string, pos: StepPosition, userId: string): string {
  const key = `oncall:${alertId}:r${pos.round}:s${pos.step}:${userId}`;
  // Notify's keys are at most 255 characters; a long user id is hashed (still one key per page).
  return key.length <= 255
    ? key
    : `oncall:${alertId}:r${pos.round}:s${pos.step}:#${createHash('sha256').update(userId).digest('hex')}`;
}

/** A phone number as timelines show it: `+3460****321` (the notification service's mask). */
export function maskPhone(number: string): string {
  const digits = number.replace(/[^\d+]/g, '');
  if (digits.length < 9) return '****';
  const head = digits.startsWith('+') ? digits.slice(0, 5) : digits.slice(0, 4);
  return `${head}****${digits.slice(-3)}`;
}

const cut = (s: string, max: number) => cutText(s, max, { unit: 'code_point', ellipsis: '…' });

/** See the file comment. */
export class EscalationEngine {
  private readonly policies: CompiledPolicy[];
  private readonly byName = new Map<string, CompiledPolicy>();
  private readonly clock: Clock;
  private readonly owner: string;
  private readonly logger: Logger;
  private readonly drawCode: () => string;

  constructor(private readonly options: EscalationEngineOptions) {
    this.policies = options.policies.map((p, i) => ({
      config: p,
      matchers: compileMatchers(
        p.match.map((m, j) => parseMatcher(m, `oncall.escalation_policies[${i}].match[${j}]`)),
        `oncall.escalation_policies[${i}].match`,
      ),
    }));
    for (const p of this.policies) this.byName.set(p.config.name, p);
    this.clock = options.clock ?? systemClock;
    this.owner = options.owner ?? newId();
    this.logger = (options.logger ?? silentLogger()).child({ component: 'escalation' });
    this.drawCode =
      options.drawCode ?? (() => String(randomInt(0, 10 ** ACK_CODE_DIGITS)).padStart(ACK_CODE_DIGITS, '0'));
  }

  /** The first policy whose matchers all match the labels; undefined when none does. */
  policyFor(labels: Readonly<Record<string, string>>): EscalationPolicyConfig | undefined {
    return this.policies.find((p) => matchesAll(p.matchers, labels))?.config;
  }

  /** The escalation state of alerts (for the status page). */
  async states(alertIds: readonly string[]): Promise<EscalationState[]> {
    return this.options.store.getMany(alertIds);
  }

  /**
   * One round of the rules: starts escalations of triggered alerts that match a policy, stops those
   * whose alert was acknowledged or resolved, pages the current step's targets (each once), and moves
   * to the next step (or round) when the current one waited long enough.
   */
  async tick(): Promise<void> {
    if (this.policies.length === 0) return;
    const now = this.clock.now();
    await this.startNew(now);
    for (const state of await this.options.store.active(this.options.maxActive)) {
      try {
        await this.drive(state, now);
      } catch (err) {
        this.logger.error(
          { err, alertId: state.alertId },
          'escalation step failed; retried at the next tick',
        );
      }
    }
    await this.options.store.purgeCodes(now - 24 * 60 * MINUTE_MS);
  }

  private async startNew(now: number): Promise<void> {
    const open = (await this.options.alerts.open(ESCALATION_OPEN_SCAN)).filter(
      (e) => e.state === 'triggered' && !e.silencedBy && !e.inhibitedBy,
    );
    if (open.length === 0) return;
    const known = new Set(
      (await this.options.store.getMany(open.map((e) => e.alert.id))).map((s) => s.alertId),
    );
    for (const entry of open) {
      if (known.has(entry.alert.id)) continue;
      const policy = this.policyFor(entry.labels);
      if (!policy) continue;
      await this.options.store.start({
        alertId: entry.alert.id,
        policy: policy.name,
        round: 0,
        step: 0,
        stepStartedAt: now,
        targets: this.resolveTargets(policy, 0, now),
        status: 'active',
        reason: '',
        pages: [],
        startedAt: now,
        updatedAt: now,
      });
    }
  }

  /** The user ids of a step at `now` (schedules resolved through the on-call lookup), each once. */
  private resolveTargets(policy: EscalationPolicyConfig, step: number, now: number): string[] {
    const users: string[] = [];
    for (const target of policy.steps[step]!.targets) {
      if ('user' in target) users.push(target.user);
      else {
        try {
          const shift = this.options.onCall?.current(target.schedule, new Date(now));
          if (shift) users.push(shift.userId);
          else this.logger.warn({ schedule: target.schedule, policy: policy.name }, 'nobody on call to page');
        } catch (err) {
          this.logger.warn({ err, schedule: target.schedule, policy: policy.name }, 'schedule not readable');
        }
      }
    }
    return [...new Set(users)];
  }

  private async drive(state: EscalationState, now: number): Promise<void> {
    const { store, alerts } = this.options;
    const entry = await alerts.get(state.alertId);
    if (!entry || entry.state !== 'triggered') {
      await store.finish(state.alertId, 'stopped', entry?.state ?? 'deleted', now);
      return;
    }
    // Muted alerts (a silence, an inhibiting alert) page nobody, and their step's clock stands still:
    // its start moves with the mute, so when the mute ends the step has its whole wait again. Earlier
    // the wait ran on under the silence, and the tick after a long silence ended paged the next step
    // at once, before anyone of the current one could acknowledge (a black-box probe).
    if (entry.silencedBy || entry.inhibitedBy) {
      if (state.stepStartedAt < now)
        await store.advance(
          state.alertId,
          state,
          { round: state.round, step: state.step, stepStartedAt: now, targets: state.targets },
          now,
        );
      return;
    }
    const policy = this.byName.get(state.policy)?.config;
    if (!policy || state.step >= policy.steps.length) {
      await store.finish(state.alertId, 'stopped', 'policy removed', now);
      return;
    }
    await this.pageStep(entry, state, now);
    const waitMs = policy.steps[state.step]!.wait_minutes * MINUTE_MS;
    if (now < state.stepStartedAt + waitMs) return;
    const next = this.nextPosition(policy, state);
    if (!next) {
      await store.finish(state.alertId, 'exhausted', 'no step left', now);
      return;
    }
    const targets = this.resolveTargets(policy, next.step, now);
    if (!(await store.advance(state.alertId, state, { ...next, stepStartedAt: now, targets }, now))) return;
    // Read the state again right before the next step's pages (an acknowledgment may have come in).
    const fresh = await alerts.get(state.alertId);
    if (!fresh || fresh.state !== 'triggered') return;
    await this.pageStep(fresh, { ...state, ...next, stepStartedAt: now, targets }, now);
  }

  private nextPosition(policy: EscalationPolicyConfig, pos: StepPosition): StepPosition | undefined {
    if (pos.step + 1 < policy.steps.length) return { round: pos.round, step: pos.step + 1 };
    if (pos.round < policy.repeat) return { round: pos.round + 1, step: 0 };
    return undefined;
  }

  private async pageStep(entry: AlertEntry, state: EscalationState, now: number): Promise<void> {
    for (const userId of state.targets) await this.pageOne(entry, state, userId, now);
  }

  /** Pages one person once (claimed in the notification log first). */
  private async pageOne(
    entry: AlertEntry,
    state: EscalationState,
    userId: string,
    now: number,
  ): Promise<void> {
    const { alerts, store, pager } = this.options;
    const alertId = entry.alert.id;
    const key: NotificationKey = {
      groupKey: `oncall:${alertId}`,
      receiver: userId,
      step: `r${state.round}:s${state.step}`,
    };
    if (!(await alerts.claimNotification(key, this.owner, this.options.claimLeaseMs))) return;
    const stepLabel = `step ${state.step + 1}${state.round > 0 ? ` (repeat ${state.round})` : ''}`;
    const idempotencyKey = pageKey(alertId, state, userId);
    // Times in the page's data come from the step (shared), not from this replica's clock: a page
    // retried by another replica after a crash is then the same request, which Notify's idempotency
    // key answers with the first notification (another request under the same key is ALREADY_EXISTS).
    const pageAt = state.stepStartedAt;
    try {
      const phones = await pager.userPhones(userId);
      const code = await store.issueCode(
        { pageKey: idempotencyKey, alertId, userId, phones, expiresAt: pageAt + this.options.codeTtlMs },
        this.drawCode,
        now,
      );
      const a = entry.alert;
      const result = await pager.page({
        userId,
        category: this.options.category,
        idempotencyKey,
        data: {
          alert_id: alertId,
          alert_name: cut(a.alertName, 200),
          title: cut(a.title, 200),
          severity: a.severity,
          summary: cut(a.message, 500),
          source_service: a.sourceService,
          policy: state.policy,
          step: String(state.step + 1),
          round: String(state.round + 1),
          ack_url: this.options.links.url(alertId, userId, pageAt + this.options.linkTtlMs),
          ack_code: code.code,
          ack_sms: `Reply ACK ${code.code}`,
        },
      });
      await alerts.completeNotification(key, this.owner);
      await store.recordPage(alertId, {
        userId,
        round: state.round,
        step: state.step,
        at: now,
        channels: result.channels,
      });
      await alerts.addTimeline(alertId, {
        at: now,
        kind: 'notified',
        actor: userId,
        detail: `paged (${state.policy} ${stepLabel}) via ${result.channels.join(', ') || 'no channel'}`,
      });
      this.logger.info(
        { alertId, userId, step: state.step, round: state.round, channels: result.channels },
        'paged',
      );
    } catch (err) {
      if (err instanceof PagerError && !err.retryable) {
        // A page that can never go (an unknown user, a category the service refuses): recorded once.
        await alerts.completeNotification(key, this.owner);
        await store.recordPage(alertId, {
          userId,
          round: state.round,
          step: state.step,
          at: now,
          channels: [],
          error: err.code,
        });
        await alerts.addTimeline(alertId, {
          at: now,
          kind: 'notified',
          actor: userId,
          detail: `page failed (${state.policy} ${stepLabel}): ${err.code}`,
        });
        this.logger.warn({ alertId, userId, code: err.code }, 'page refused by the notification service');
        return;
      }
      await alerts.releaseNotification(key, this.owner);
      throw err;
    }
  }
}

/** Options of {@link EscalationAcknowledger}. */
export interface EscalationAcknowledgerOptions {
  alerts: AlertStore;
  lifecycle: Pick<AlertLifecycle, 'acknowledge'>;
  store: EscalationStore;
  links: AckLinks;
  clock?: Clock;
  logger?: Logger;
}

/** What a link acknowledgment answers (`refused` carries why, for the page). */
export type LinkAckOutcome =
  | { outcome: 'acknowledged' | 'already_acknowledged'; alertId: string; userId: string }
  | { outcome: 'refused'; reason: 'malformed' | 'forged' | 'expired' | 'unknown_alert' };

/** Takes acknowledgments back from where pages arrive: the signed link and the SMS code. */
export class EscalationAcknowledger implements PageAcknowledger {
  private readonly clock: Clock;
  private readonly logger: Logger;

  constructor(private readonly options: EscalationAcknowledgerOptions) {
    this.clock = options.clock ?? systemClock;
    this.logger = (options.logger ?? silentLogger()).child({ component: 'escalation-ack' });
  }

  /** Checks a link's token without changing anything (the GET of the link). */
  async checkLink(token: unknown): Promise<LinkAckOutcome> {
    const check = this.options.links.verify(token);
    if (!check.ok) return { outcome: 'refused', reason: check.reason };
    const entry = await this.options.alerts.get(check.alertId);
    if (!entry) return { outcome: 'refused', reason: 'unknown_alert' };
    return {
      outcome: entry.state === 'triggered' ? 'acknowledged' : 'already_acknowledged',
      alertId: check.alertId,
      userId: check.userId,
    };
  }

  /** Acknowledges through a link's token (the POST of the link's page). */
  async acknowledgeByLink(token: unknown): Promise<LinkAckOutcome> {
    const check = await this.checkLink(token);
    if (check.outcome === 'refused') return check;
    const outcome = await this.acknowledge(check.alertId, check.userId, 'link');
    return { ...check, outcome };
  }

  async acknowledgeByCode(code: string, from: string): Promise<AckOutcome> {
    const c = typeof code === 'string' ? code.trim() : '';
    if (!/^\d{4,8}$/.test(c) || typeof from !== 'string') return 'refused';
    const row = await this.options.store.liveCode(c, this.clock.now());
    if (!row || !row.phones.includes(from.trim())) {
      this.logger.info({ from: maskPhone(from) }, 'sms acknowledgment refused');
      return 'refused';
    }
    return this.acknowledge(row.alertId, row.userId, `sms from ${maskPhone(from)}`);
  }

  private async acknowledge(
    alertId: string,
    userId: string,
    how: string,
  ): Promise<'acknowledged' | 'already_acknowledged'> {
    const entry = await this.options.alerts.get(alertId);
    if (!entry || entry.state !== 'triggered') return 'already_acknowledged';
    try {
      await this.options.lifecycle.acknowledge(alertId, userId, how);
      this.logger.info({ alertId, userId, how }, 'alert acknowledged from a page');
      return 'acknowledged';
    } catch (err) {
      // Another replica (or the page) acknowledged or resolved it between the read and the write.
      if (err instanceof FailedPreconditionError) return 'already_acknowledged';
      throw err;
    }
  }
}
