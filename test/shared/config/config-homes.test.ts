/**
 * One rule for config homes: a section lives beside the code that reads it, and the root config of
 * each service composes those sections (and re-exports them for its callers).
 */
import * as notificationRoot from '../../../services/notification/config';
import * as monitorRoot from '../../../services/monitor/config';
import { InboxConfigSchema, DEFAULT_INBOX_CONFIG } from '../../../services/notification/inbox/config';
import { AdminAuthConfigSchema } from '../../../services/notification/admin/config';
import { TargetConfigSchema } from '../../../services/monitor/targets/config';
import { SLOConfigSchema, SLOSchema } from '../../../services/monitor/slo/config';
import { WebConfigSchema } from '../../../services/monitor/web/config';
import { pullMetricsConfigSchema } from '../../../shared/monitoring/config';

describe('config homes', () => {
  it('the notification root composes the inbox and admin sections defined beside their areas', () => {
    expect(notificationRoot.InboxConfigSchema).toBe(InboxConfigSchema);
    expect(notificationRoot.AdminAuthConfigSchema).toBe(AdminAuthConfigSchema);
    const config = notificationRoot.loadNotificationConfig(
      { inbox: { max_page_size: 7 }, admin: { auth: { demo_user: 'ann' } } },
      { file: null, env: {} },
    );
    expect(config.inbox.max_page_size).toBe(7);
    expect(config.admin.auth.demo_user).toBe('ann');
    expect(DEFAULT_INBOX_CONFIG.max_page_size).toBe(50);
  });

  it('the monitor root composes the slo, targets and web sections defined beside their areas', () => {
    expect(monitorRoot.SLOConfigSchema).toBe(SLOConfigSchema);
    expect(monitorRoot.SLOSchema).toBe(SLOSchema);
    expect(monitorRoot.TargetConfigSchema).toBe(TargetConfigSchema);
    expect(monitorRoot.WebConfigSchema).toBe(WebConfigSchema);
    const config = monitorRoot.loadMonitorConfig(
      {
        targets: [{ name: 'n', http_url: 'http://127.0.0.1:1/health' }],
        web: { recent_alerts: 9 },
        slo: { objectives: [{ name: 's', metric: 'm', threshold_ms: 5 }] },
      },
      { file: null, env: {} },
    );
    expect(config.targets[0]!.name).toBe('n');
    expect(config.web.recent_alerts).toBe(9);
    expect(config.slo.objectives[0]!.window).toBe(300);
  });

  it('the pull_metrics section is the monitoring library’s, which reads it', () => {
    expect(pullMetricsConfigSchema().parse(undefined)).toEqual(
      monitorRoot.loadMonitorConfig(undefined, { file: null, env: {} }).pull_metrics,
    );
  });
});
