import { join } from 'node:path';

import { loadMonitorConfig } from '../../../services/monitor/config';
import { loadNotificationConfig } from '../../../services/notification/config';

const example = join(__dirname, '../../../config/application.example.yaml');

describe('config/application.example.yaml', () => {
  it('is a valid notification config', () => {
    const config = loadNotificationConfig(undefined, { file: example, env: {} });
    expect(config.push_backends.map((b) => b.driver)).toEqual(['push_driver_a', 'push_driver_b']);
  });

  it('is a valid monitor config', () => {
    const config = loadMonitorConfig(undefined, { file: example, env: {} });
    expect(config.slo.objectives[0]?.window).toBe(300);
  });
});
