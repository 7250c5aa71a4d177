/**
 * `monitor.oncall.escalation_policies` and `monitor.oncall.paging` through loadMonitorConfig: defaults,
 * bounds at and past the limit, refusals that name the key path and never show the secrets.
 */
import { ConfigError } from '../../../shared/config';
import { loadMonitorConfig, type MonitorConfigInput } from '../../../services/monitor/config';
import { ESCALATION_LIMITS } from '../../../services/monitor/oncall/escalation-config';

const SECRET_KEY = 'signing-key-0123456789-0123456789-abcdef';
const PAGING = {
  grpc_address: 'localhost:50051',
  api_token: 'paging-token-secret-value',
  public_base_url: 'https://monitor.example.com',
  signing_key: SECRET_KEY,
};
const PRIMARY = {
  name: 'primary',
  time_zone: 'Europe/Berlin',
  rotation: { users: ['alice'], hand_off: '09:00', hand_off_day: 'mon', start: '2026-01-05' },
};
const step = (user = 'alice') => ({ targets: [{ user }], wait_minutes: 5 });
const load = (oncall: unknown, extra: Partial<MonitorConfigInput> = {}) =>
  loadMonitorConfig({ ...extra, oncall } as Partial<MonitorConfigInput>, { env: {}, file: null });

function failure(oncall: unknown, extra: Partial<MonitorConfigInput> = {}): string {
  try {
    load(oncall, extra);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    const message = (err as Error).message;
    expect(message).not.toContain(SECRET_KEY);
    expect(message).not.toContain(PAGING.api_token);
    return message;
  }
  throw new Error('expected the config to be refused');
}

describe('monitor oncall escalation config', () => {
  it('has no policies by default, and the documented paging defaults', () => {
    const { oncall } = load(undefined);
    expect(oncall.escalation_policies).toEqual([]);
    expect(oncall.paging).toMatchObject({
      category: 'oncall-page',
      link_ttl_minutes: 1440,
      code_ttl_minutes: 1440,
    });
  });

  it('refuses a step naming a schedule that is not configured, with its key path', () => {
    const message = failure({
      escalation_policies: [
        { name: 'db', steps: [step(), { targets: [{ schedule: 'secondary' }], wait_minutes: 5 }] },
      ],
      paging: PAGING,
      schedules: [PRIMARY],
    });
    expect(message).toContain('monitor.oncall.escalation_policies[0].steps[1].targets[0].schedule');
    expect(message).toContain('unknown schedule "secondary" (configured: primary)');
  });

  it('reads a policy with user and schedule targets, matchers and repeat', () => {
    const { oncall } = load({
      escalation_policies: [
        {
          name: 'db',
          match: ['severity="critical"', 'alertname=~"db.*"'],
          steps: [step(), { targets: [{ schedule: 'primary' }, { user: '山田' }], wait_minutes: 10 }],
          repeat: 2,
        },
      ],
      paging: PAGING,
      schedules: [PRIMARY],
    });
    expect(oncall.escalation_policies[0]!.steps[1]!.targets).toEqual([
      { schedule: 'primary' },
      { user: '山田' },
    ]);
    expect(oncall.escalation_policies[0]!.repeat).toBe(2);
  });

  it('policies need grpc_address, signing_key and public_base_url, each named', () => {
    const message = failure({ escalation_policies: [{ name: 'db', steps: [step()] }] });
    expect(message).toContain('oncall.paging.grpc_address');
    expect(message).toContain('oncall.paging.signing_key');
    expect(message).toContain('oncall.paging.public_base_url');
  });

  it('refuses a short signing key, wait_minutes 0, a bad matcher, a step without targets, duplicate names', () => {
    expect(failure({ paging: { ...PAGING, signing_key: 'short' } })).toContain('oncall.paging.signing_key');
    const bad = (policy: Record<string, unknown>) =>
      failure({ escalation_policies: [{ name: 'db', steps: [step()], ...policy }], paging: PAGING });
    expect(bad({ steps: [{ targets: [{ user: 'a' }], wait_minutes: 0 }] })).toContain(
      'oncall.escalation_policies[0].steps[0].wait_minutes',
    );
    expect(bad({ match: ['severity=~"(a+)+"'] })).toContain('oncall.escalation_policies[0].match[0]');
    expect(bad({ steps: [{ targets: [], wait_minutes: 1 }] })).toContain(
      'oncall.escalation_policies[0].steps[0].targets',
    );
    expect(bad({ repeat: ESCALATION_LIMITS.repeat + 1 })).toContain('oncall.escalation_policies[0].repeat');
    expect(
      failure({
        escalation_policies: [
          { name: 'db', steps: [step()] },
          { name: 'db', steps: [step()] },
        ],
        paging: PAGING,
      }),
    ).toContain('oncall.escalation_policies');
  });

  it('bounds: steps, targets and policies at the limit load, one more is refused', () => {
    const steps = (n: number) => Array.from({ length: n }, () => step());
    const targets = (n: number) => [
      { targets: Array.from({ length: n }, (_, i) => ({ user: `u${i}` })), wait_minutes: 1 },
    ];
    const policies = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `p${i}`, steps: [step()] }));
    const ok = (p: unknown[]) => load({ escalation_policies: p, paging: PAGING });
    expect(() => ok([{ name: 'a', steps: steps(ESCALATION_LIMITS.stepsPerPolicy) }])).not.toThrow();
    expect(
      failure({
        escalation_policies: [{ name: 'a', steps: steps(ESCALATION_LIMITS.stepsPerPolicy + 1) }],
        paging: PAGING,
      }),
    ).toContain('oncall.escalation_policies[0].steps');
    expect(() => ok([{ name: 'a', steps: targets(ESCALATION_LIMITS.targetsPerStep) }])).not.toThrow();
    expect(
      failure({
        escalation_policies: [{ name: 'a', steps: targets(ESCALATION_LIMITS.targetsPerStep + 1) }],
        paging: PAGING,
      }),
    ).toContain('oncall.escalation_policies[0].steps[0].targets');
    expect(() => ok(policies(ESCALATION_LIMITS.policies))).not.toThrow();
    expect(
      failure({ escalation_policies: policies(ESCALATION_LIMITS.policies + 1), paging: PAGING }),
    ).toContain('oncall.escalation_policies');
  });

  it('in production the links must be https', () => {
    const production = {
      environment: 'production',
      server: { api_tokens: ['t'.repeat(32)] },
    } as Partial<MonitorConfigInput>;
    const oncall = {
      escalation_policies: [{ name: 'db', steps: [step()] }],
      paging: { ...PAGING, public_base_url: 'http://monitor.example.com' },
    };
    expect(failure(oncall, production)).toContain('oncall.paging.public_base_url');
    expect(() => load(oncall)).not.toThrow();
  });
});
