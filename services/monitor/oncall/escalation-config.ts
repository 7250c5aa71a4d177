/**
 * The escalation part of the monitor's `oncall` section (issue 28, README "Escalation"):
 * `escalation_policies` (who is paged, step by step, for which alerts) and `paging` (how: the
 * notification service's Notify with a required category, signed acknowledgment links, SMS codes).
 * Composed into services/monitor/config.ts under `oncall` beside the schedules.
 */
import { z } from 'zod';

import { hostPort, itemName, positiveInt, uniqueNames } from '../../../shared/config';
import { compileMatcher, parseMatcher } from '../alerts/matchers';

/** Bounds of the escalation config. */
export const ESCALATION_LIMITS = {
  policies: 100,
  stepsPerPolicy: 20,
  targetsPerStep: 20,
  matchersPerPolicy: 16,
  /** Times the whole list may run again after the last step. */
  repeat: 10,
  /** Longest wait of one step (a week). */
  waitMinutes: 10_080,
} as const;

/** A matcher in Alertmanager's text form (`name="value"`, `name=~"re"`), checked when the config loads. */
function matcherText() {
  return z.string().superRefine((text, ctx) => {
    try {
      compileMatcher(parseMatcher(text, 'match'), 'match');
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
    }
  });
}

/** One target of a step: a user of the notification service's directory, or a schedule's on-call person. */
export const EscalationTargetSchema = z.union([
  z.strictObject({ user: z.string().trim().min(1).max(255) }),
  z.strictObject({ schedule: itemName() }),
]);

/** One step: page these targets, then wait this long for an acknowledgment. */
export const EscalationStepSchema = z.strictObject({
  targets: z
    .array(EscalationTargetSchema)
    .min(1, { error: 'expected at least one target' })
    .max(ESCALATION_LIMITS.targetsPerStep, {
      error: `expected at most ${ESCALATION_LIMITS.targetsPerStep} targets`,
    }),
  wait_minutes: positiveInt().max(ESCALATION_LIMITS.waitMinutes, {
    error: `expected at most ${ESCALATION_LIMITS.waitMinutes} minutes`,
  }),
});

/** One escalation policy. The first policy whose matchers all match an alert's labels escalates it. */
export const EscalationPolicySchema = z.strictObject({
  name: itemName(),
  /** Label matchers (text form); empty matches every alert. */
  match: z
    .array(matcherText())
    .max(ESCALATION_LIMITS.matchersPerPolicy, {
      error: `expected at most ${ESCALATION_LIMITS.matchersPerPolicy} matchers`,
    })
    .default(() => []),
  steps: z
    .array(EscalationStepSchema)
    .min(1, { error: 'expected at least one step' })
    .max(ESCALATION_LIMITS.stepsPerPolicy, {
      error: `expected at most ${ESCALATION_LIMITS.stepsPerPolicy} steps`,
    }),
  /** Times the whole list of steps runs again after the last one (0: once). */
  repeat: z
    .number()
    .int()
    .min(0)
    .max(ESCALATION_LIMITS.repeat, { error: `expected at most ${ESCALATION_LIMITS.repeat}` })
    .default(0),
});

function isHttpsUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' && url.search === '' && url.hash === '';
  } catch {
    return false;
  }
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.search === '' && url.hash === '';
  } catch {
    return false;
  }
}

/** `monitor.oncall.paging`: how pages go out and come back. */
export const PagingConfigSchema = z
  .strictObject({
    /** `host:port` of the notification service's gRPC port (Notify, GetUser). */
    grpc_address: hostPort().optional(),
    /** Sent as `authorization: Bearer <token>` (scopes `notify:send` and `users:read`); a secret. */
    api_token: z.string().default(''),
    /** A `required: true` category of the notification service's `notify.categories` (e.g. `oncall-page`). */
    category: itemName().default('oncall-page'),
    /**
     * The public origin of the monitor's HTTP port the acknowledgment links point at (with the path
     * prefix of a proxy in front), e.g. `https://monitor.example.com`. https in production.
     */
    public_base_url: z
      .string()
      .refine((u) => u === '' || isHttpUrl(u), { message: 'must be an http(s):// URL without query' })
      .default(''),
    /** Key the acknowledgment links are signed with (HMAC-SHA256), at least 32 bytes; a secret. */
    signing_key: z
      .string()
      .refine((k) => k === '' || Buffer.byteLength(k, 'utf8') >= 32, { message: 'must be at least 32 bytes' })
      .default(''),
    /** How long an acknowledgment link works (default 24 h). */
    link_ttl_minutes: positiveInt().max(43_200, { error: 'expected at most 43200 minutes' }).default(1440),
    /** How long an SMS acknowledgment code works (default 24 h). */
    code_ttl_minutes: positiveInt().max(43_200, { error: 'expected at most 43200 minutes' }).default(1440),
    /** Milliseconds one Notify / GetUser call may take. */
    timeout_ms: positiveInt().max(60_000, { error: 'expected at most 60000 ms' }).default(5000),
    /** How often the escalation engine looks at open alerts. */
    tick_seconds: positiveInt().max(300, { error: 'expected at most 300 seconds' }).default(15),
    /** How long a replica holds a page it claimed before another may retry it (a crash mid-send). */
    claim_lease_seconds: positiveInt().max(3600, { error: 'expected at most 3600 seconds' }).default(60),
    /** Escalations followed at once (open alerts being escalated); more wait for a slot. */
    max_active: positiveInt().max(100_000, { error: 'expected at most 100000' }).default(1000),
  })
  .prefault({});

/**
 * The escalation keys of `monitor.oncall` (spread into the section by services/monitor/config.ts).
 * With policies, `paging.grpc_address`, `signing_key` and `public_base_url` are required.
 */
export function escalationConfigShape() {
  return {
    escalation_policies: z
      .array(EscalationPolicySchema)
      .max(ESCALATION_LIMITS.policies, { error: `expected at most ${ESCALATION_LIMITS.policies} policies` })
      .default(() => [])
      .superRefine(uniqueNames('escalation policy')),
    paging: PagingConfigSchema,
  };
}

/** The escalation keys, validated together (policies need the paging settings). */
export const EscalationConfigSchema = z.strictObject(escalationConfigShape()).superRefine((c, ctx) => {
  checkEscalation(c, ctx);
});

/**
 * Cross-field checks of the escalation keys; `path` is where they sit (`['oncall']` in the monitor
 * config). With policies, the paging settings are required; in production the links must be https
 * (they carry a credential).
 */
export function checkEscalation(
  c: Pick<EscalationConfig, 'escalation_policies' | 'paging'>,
  ctx: z.RefinementCtx,
  path: (string | number)[] = [],
  environment = '',
): void {
  if (c.escalation_policies.length === 0) return;
  const need = (key: string, message: string) =>
    ctx.addIssue({ code: 'custom', path: [...path, 'paging', key], message });
  const required = 'required when escalation_policies are configured';
  if (!c.paging.grpc_address) need('grpc_address', required);
  if (c.paging.signing_key === '') need('signing_key', required);
  if (c.paging.public_base_url === '') need('public_base_url', required);
  else if (environment === 'production' && !isHttpsUrl(c.paging.public_base_url))
    need('public_base_url', 'must be an https:// URL in production (the links carry a credential)');
}

/** The validated escalation keys. */
export type EscalationConfig = z.infer<typeof EscalationConfigSchema>;
/** One validated policy. */
export type EscalationPolicyConfig = z.infer<typeof EscalationPolicySchema>;
/** One step's target. */
export type EscalationTarget = z.infer<typeof EscalationTargetSchema>;
